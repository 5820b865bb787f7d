package api

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

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

// forward serves r on the aggregate's owner and relays its reply (timed as
// op from start). It runs beside the subscription, counted in flight like
// any request.
func (s *Service) forward(r *Request, id, op string, start time.Time, serve func()) {
	rp, asJSON := s.replyTo(r, op, start), wantsJSON(r.Header)
	if !s.begin(rp, asJSON) {
		return
	}
	m := &nats.Msg{Subject: r.Subject, Data: r.Data, Header: r.Header}
	if r.Caller != nil && s.tenants != nil {
		// A caller this node verified itself (an HTTP request): the owner
		// checks it again by its principal's identity, which travels on the
		// nodes' own subjects only.
		info, known := s.tenants.ForwardInfo(r.Caller)
		if !known {
			respondError(rp, asJSON, &Error{Code: 403, Field: "identity", Message: "the caller is no principal of this node"})
			s.inflight.done()
			return
		}
		m.Header = nats.Header{}
		for k, v := range r.Header {
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

// ServeForwarded serves a request another node forwarded here (its
// transport checked the reply subject): the caller is identified from the
// headers the forwarding node copied. If this node no longer serves the
// aggregate (it handed it over while the request was on its way) the
// request goes on to the next owner, up to maxHops nodes, then answers
// 503: retry. It is timed where it arrived, not here.
func (s *Service) ServeForwarded(r *Request) {
	rt := s.routes.find(r.Subject)
	if rt == nil || rt == s.routes.unknown {
		respondError(s.replyTo(r, "", time.Time{}), wantsJSON(r.Header), &Error{Code: 404, Field: "operation", Message: "no endpoint for " + r.Subject})
		return
	}
	if id, ok := aggregateOf(r.Subject); ok && s.router != nil && !s.router.Serves(id) {
		hops, _ := strconv.Atoi(r.Header.Get(hopsHeader))
		if hops+1 >= maxHops {
			respondError(s.replyTo(r, "", time.Time{}), wantsJSON(r.Header), &Error{Code: 503,
				Message: id + " moved between nodes while the request was forwarded; retry"})
			return
		}
		if r.Header == nil {
			r.Header = nats.Header{}
		}
		r.Header.Set(hopsHeader, strconv.Itoa(hops+1))
		s.forward(r, id, "", time.Time{}, func() { s.serve(r, rt, "", time.Time{}) })
		return
	}
	s.serve(r, rt, "", time.Time{})
}

// hopsHeader counts the nodes a forwarded request went on from; a request
// goes through maxHops nodes at most (placement changing under it).
const (
	hopsHeader = "Agentmem-Hops"
	maxHops    = 4
)
