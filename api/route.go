package api

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/tenancy"
)

// Router places aggregates on the nodes of a cluster. Without
// one (Deps.Router nil) this node serves every aggregate.
type Router interface {
	// Serves reports whether this node serves aggregate id now.
	Serves(id string) bool
	// Forward sends m to the node that serves aggregate id and returns its
	// reply; local reports that this node serves it after all (it took the
	// partition while Forward waited for an owner).
	Forward(ctx context.Context, id string, m *nats.Msg) (reply *nats.Msg, local bool, err error)
}

// aggregateOf returns the aggregate id a request subject addresses
// (subject.Subject.Aggregate). Malformed subjects are answered where they
// are received.
func aggregateOf(s string) (string, bool) {
	p, err := subject.Parse(s)
	if err != nil {
		return "", false
	}
	return p.Aggregate()
}

// forward serves r on the aggregate's owner and relays its reply. It runs
// beside the subscription, counted in flight like any request.
func (s *Service) forward(r request, id string, serve func()) {
	rp, asJSON := s.replyTo(r), wantsJSON(r.Headers())
	if !s.begin(rp, asJSON) {
		return
	}
	m := &nats.Msg{Subject: r.Subject(), Data: r.Data(), Header: nats.Header(r.Headers())}
	if l, ok := localOf(r); ok && l.who != nil && s.tenants != nil {
		// A caller this node verified itself (an HTTP request): the owner
		// checks it again by its principal's identity, which travels on the
		// nodes' own subjects only.
		info, known := s.tenants.ForwardInfo(l.who)
		if !known {
			respondError(rp, asJSON, &Error{Code: 403, Field: "identity", Message: "the caller is no principal of this node"})
			s.inflight.done()
			return
		}
		m.Header = nats.Header{}
		for k, v := range l.header {
			m.Header[k] = v
		}
		m.Header.Set(tenancy.RequestInfoHeader, info)
	}
	go func() {
		defer s.inflight.done()
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ForwardTimeout)
		defer cancel()
		reply, local, err := s.router.Forward(ctx, id, m)
		switch {
		case local:
			serve()
		case err != nil:
			// A timeout is an unknown outcome, as for any request: retry
			// with the same command id.
			s.metrics.Forwards.WithLabelValues("error").Inc()
			respondError(rp, asJSON, &Error{Code: 503, Message: "forwarding to the node that serves " + id + ": " + err.Error()})
		default:
			s.metrics.Forwards.WithLabelValues("ok").Inc()
			// Relay the reply as it came: its body and headers, the
			// Content-Type and error headers included.
			rp.publish(reply.Data, false, reply.Header)
		}
	}()
}

// ServeForwarded serves a request another node forwarded here (m's subject
// is the original request subject, its reply the forwarding node's inbox):
// the caller is identified from the headers the forwarding node copied. If
// this node no longer serves the aggregate (it handed it over while the
// request was on its way) the request goes on to the next owner, up to
// maxHops nodes, then answers 503: retry.
func (s *Service) ServeForwarded(m *nats.Msg) {
	r := forwardedRequest{m}
	if m.Reply != "" && !replyAllowed(m.Reply, forwardReplyPrefixes) {
		// Only nodes reach _AMN.; still, never answer into anything but
		// an inbox (the node's own spaces are refused whatever the prefix).
		s.metrics.RefusedReplies.Inc()
		s.logger.Warn("forwarded request dropped: reply subject is not an inbox", "subject", m.Subject, "reply", m.Reply)
		return
	}
	rt, ok := s.routes.find(m.Subject)
	if !ok {
		respondError(s.replyTo(r), wantsJSON(r.Headers()), &Error{Code: 404, Field: "operation", Message: "no endpoint for " + m.Subject})
		return
	}
	if id, ok := aggregateOf(m.Subject); ok && s.router != nil && !s.router.Serves(id) {
		hops, _ := strconv.Atoi(m.Header.Get(hopsHeader))
		if hops+1 >= maxHops {
			respondError(s.replyTo(r), wantsJSON(r.Headers()), &Error{Code: 503,
				Message: id + " moved between nodes while the request was forwarded; retry"})
			return
		}
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(hopsHeader, strconv.Itoa(hops+1))
		s.forward(r, id, func() { s.serve(r, rt.serve) })
		return
	}
	s.serve(r, rt.serve)
}

// forwardReplyPrefixes: a forwarded request's reply subject is the
// forwarding node's request inbox.
var forwardReplyPrefixes = []string{"_INBOX."}

// hopsHeader counts the nodes a forwarded request went on from; a request
// goes through maxHops nodes at most (placement changing under it).
const (
	hopsHeader = "Agentmem-Hops"
	maxHops    = 4
)

// forwardedRequest is a forwarded NATS message as a request; the service
// answers it through its replier (to the forwarding node's inbox).
type forwardedRequest struct{ m *nats.Msg }

func (f forwardedRequest) Data() []byte           { return f.m.Data }
func (f forwardedRequest) Headers() micro.Headers { return micro.Headers(f.m.Header) }
func (f forwardedRequest) Subject() string        { return f.m.Subject }
func (f forwardedRequest) Reply() string          { return f.m.Reply }
