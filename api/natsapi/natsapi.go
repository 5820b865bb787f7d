// Package natsapi serves the memory API over NATS: the "memory" micro
// service (so $SRV.PING, INFO and STATS work), an endpoint per operation
// of the service's table, and the requests other nodes forward here.
//
// Subjects: mem.v1.session.<id>.{create,append,context,…} and the others
// of api's operation table (api.Service.Operations). Bodies are protobuf
// messages from proto/memory/v1, or protojson with header "Content-Type:
// application/json"; errors carry the micro headers Nats-Service-Error and
// Nats-Service-Error-Code (package api writes both).
//
// This package only carries requests: it checks a reply subject is one
// the node may answer, hands the request to the dispatcher (package
// dispatch: Handler, Serve, ServeForwarded, as the HTTP API's Do does)
// with a way to publish its answer, and never blocks its subscription on
// one.
package natsapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/dispatch"
	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/internal/version"
)

// Config names the micro service and bounds its subscriptions.
type Config struct {
	Name, Version, QueueGroup string
	// MaxPending bounds the requests queued per endpoint subscription before
	// NATS reports a slow consumer (the client then times out and retries).
	MaxPending int
	// ReplyPrefixes are the reply subjects answered (default
	// DefaultReplyPrefixes). A request whose reply subject is elsewhere is
	// dropped unanswered and counted; the node's own subject spaces are
	// refused whatever this says.
	ReplyPrefixes []string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Name: "memory", Version: version.Version, QueueGroup: "memory", MaxPending: 1 << 16, ReplyPrefixes: DefaultReplyPrefixes}
}

// Server is the service served on a NATS connection.
type Server struct {
	svc *dispatch.Dispatcher
	nc  *nats.Conn
	ms  micro.Service
	cfg Config
}

// otherOps are the catch-all endpoints: every operation under a known
// prefix, so a typo in an operation (mem.v1.session.s1.apend) answers 404
// naming the valid ones instead of "no responders", which looks like the
// service is down. A catch-all subscribes in the service's queue group,
// like every endpoint, and its subject also matches the valid operations:
// NATS picks one member of a queue group per message across all the
// group's subscriptions whose subjects match, so each request is handled
// exactly once, by its own endpoint or by the catch-all, which hands it to
// the service to find its operation (endpoint statistics count the latter
// under the catch-all).
var otherOps = []struct{ name, subject, family string }{
	{"session_other", "mem.v1.session.*.*", subject.Session},
	{"sessions_other", "mem.v1.sessions.*", subject.Sessions},
	{"agent_other", "mem.v1.agent.*.*", subject.Agent},
	{"scope_other", "mem.v1.scope.*.*.*", subject.Scope},
	{"data_other", "mem.v1.data.*", subject.Data},
}

// malformedOps answer a subject whose id has dots (it splits into more
// tokens and would match no endpoint: no responders) with a 400.
var malformedOps = []struct{ name, subject, family string }{
	{"session_malformed", "mem.v1.session.*.*.>", subject.Session},
	{"agent_malformed", "mem.v1.agent.*.*.>", subject.Agent},
	{"scope_malformed", "mem.v1.scope.*.*.*.>", subject.Scope},
}

// Start registers the operations svc dispatches on nc, as the micro
// service cfg names.
func Start(nc *nats.Conn, svc *dispatch.Dispatcher, cfg Config) (*Server, error) {
	d := DefaultConfig()
	if cfg.Name == "" {
		cfg.Name, cfg.QueueGroup = d.Name, d.QueueGroup
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = d.MaxPending
	}
	if len(cfg.ReplyPrefixes) == 0 {
		cfg.ReplyPrefixes = DefaultReplyPrefixes
	}
	ms, err := micro.AddService(nc, micro.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: "agentmem: event-sourced memory for LLM agents",
		QueueGroup:  cfg.QueueGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("natsapi: add service: %w", err)
	}
	s := &Server{svc: svc, nc: nc, ms: ms, cfg: cfg}
	add := func(name, subj string, h func(*api.Request)) error {
		if err := ms.AddEndpoint(name, s.handler(h), micro.WithEndpointSubject(subj),
			micro.WithEndpointPendingLimits(cfg.MaxPending, 256<<20)); err != nil {
			_ = ms.Stop()
			return fmt.Errorf("natsapi: add endpoint %s: %w", name, err)
		}
		return nil
	}
	families := map[string]bool{}
	for _, op := range svc.Operations() {
		if err := add(op.Name, op.Subject, svc.Handler(op.Name)); err != nil {
			return nil, err
		}
		p, _ := subject.Parse(op.Subject)
		families[p.Family] = true
	}
	for _, o := range malformedOps {
		if h := svc.MalformedHandler(o.family); h != nil {
			if err := add(o.name, o.subject, h); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range otherOps {
		if families[o.family] {
			if err := add(o.name, o.subject, svc.Serve); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// handler adapts h to a micro endpoint. It drops a request whose reply
// subject the node must not answer (replyAllowed) before any work is done
// for it; a request without a reply subject is served unanswered, as a
// publish.
func (s *Server) handler(h func(*api.Request)) micro.HandlerFunc {
	return func(m micro.Request) {
		reply := m.Reply()
		if reply != "" && !replyAllowed(reply, s.cfg.ReplyPrefixes) {
			s.svc.Dropped("request dropped: reply subject is not an inbox", m.Subject(), reply)
			return
		}
		h(&api.Request{Subject: m.Subject(), Data: m.Data(), Header: nats.Header(m.Headers()), Write: s.publisher(reply), Flush: s.nc.FlushWithContext})
	}
}

// publisher publishes an answer on reply ("": nobody to answer). Unlike
// micro.Request's Respond it is safe from any goroutine after the handler
// returned (micro's handler reads the request's state once it returns, so
// answering through it from an actor would race).
func (s *Server) publisher(reply string) func([]byte, nats.Header) {
	if reply == "" {
		return nil
	}
	return func(data []byte, hdr nats.Header) {
		_ = s.nc.PublishMsg(&nats.Msg{Subject: reply, Data: data, Header: hdr})
	}
}

// forwardReplyPrefixes: a forwarded request's reply subject is the
// forwarding node's request inbox.
var forwardReplyPrefixes = []string{"_INBOX."}

// ServeForwarded serves a request another node forwarded here (m's subject
// is the original request subject, its reply the forwarding node's inbox;
// dispatch.Dispatcher.ServeForwarded).
func (s *Server) ServeForwarded(m *nats.Msg) {
	if m.Reply != "" && !replyAllowed(m.Reply, forwardReplyPrefixes) {
		// Only nodes reach _AMN.; still, never answer into anything but
		// an inbox (the node's own spaces are refused whatever the prefix).
		s.svc.Dropped("forwarded request dropped: reply subject is not an inbox", m.Subject, m.Reply)
		return
	}
	s.svc.ServeForwarded(&api.Request{Subject: m.Subject, Data: m.Data, Header: m.Header, Write: s.publisher(m.Reply), Flush: s.nc.FlushWithContext})
}

// Stop stops taking requests (draining the subscriptions), then stops the
// service (api.Service.Stop: it waits, bounded by ctx, for the replies of
// the requests already dispatched).
func (s *Server) Stop(ctx context.Context) error {
	err := s.ms.Stop()
	// Once the server answered the flush it has processed the drains'
	// unsubscribes: what it routed here before is in this client already.
	// (Best effort: a connection that is down delivers nothing more.)
	fctx, cancel := context.WithTimeout(ctx, time.Second)
	_ = s.nc.FlushWithContext(fctx)
	cancel()
	return errors.Join(err, s.svc.Stop(ctx))
}
