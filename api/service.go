package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Dispatcher hands a request to the owner of a session (actors.Directory).
type Dispatcher interface {
	Dispatch(sessionID string, body proto.Message, reply actors.ReplyFunc) error
}

var _ Dispatcher = (*actors.Directory)(nil)

// Config names the service.
type Config struct {
	Name       string
	Version    string
	QueueGroup string
	// MaxPending bounds the requests queued per endpoint subscription before
	// NATS reports a slow consumer (the client then times out and retries).
	MaxPending int
}

// DefaultConfig returns the service defaults.
func DefaultConfig() Config {
	return Config{Name: "memory", Version: "0.1.0", QueueGroup: "memory", MaxPending: 1 << 16}
}

// Service is the running micro service.
type Service struct {
	svc      micro.Service
	d        Dispatcher
	inflight sync.WaitGroup
}

type endpoint struct {
	op     string
	newReq func() proto.Message
}

var sessionEndpoints = []endpoint{
	{"create", func() proto.Message { return &memoryv1.CreateSessionRequest{} }},
	{"append", func() proto.Message { return &memoryv1.AppendRequest{} }},
	{"context", func() proto.Message { return &memoryv1.ContextRequest{} }},
	{"get", func() proto.Message { return &memoryv1.GetSessionRequest{} }},
	{"kernel", func() proto.Message { return &memoryv1.KernelRequest{} }},
	{"state", func() proto.Message { return &memoryv1.StateRequest{} }},
	{"status", func() proto.Message { return &memoryv1.StatusRequest{} }},
}

// SessionSubject is the request subject of one session endpoint.
func SessionSubject(id, op string) string { return "mem.v1.session." + id + "." + op }

// Start registers the service on nc.
func Start(nc *nats.Conn, d Dispatcher, cfg Config) (*Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: "agentmem: event-sourced memory for LLM agents",
		QueueGroup:  cfg.QueueGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("api: add service: %w", err)
	}
	s := &Service{svc: svc, d: d}
	for _, ep := range sessionEndpoints {
		err := svc.AddEndpoint("session_"+ep.op, micro.HandlerFunc(s.sessionHandler(ep)),
			micro.WithEndpointSubject("mem.v1.session.*."+ep.op),
			micro.WithEndpointPendingLimits(cfg.MaxPending, 256<<20))
		if err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("api: add endpoint %s: %w", ep.op, err)
		}
	}
	// An id with dots splits into more subject tokens and would match no
	// endpoint (no responders): answer those with a 400 instead.
	err = svc.AddEndpoint("session_malformed", micro.HandlerFunc(func(r micro.Request) {
		respondError(r, wantsJSON(r.Headers()), &Error{Code: 400, Field: "session_id",
			Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject mem.v1.session.<id>.<op>"})
	}), micro.WithEndpointSubject("mem.v1.session.*.*.>"))
	if err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("api: add endpoint malformed: %w", err)
	}
	return s, nil
}

func (s *Service) sessionHandler(ep endpoint) func(micro.Request) {
	return func(r micro.Request) {
		asJSON := wantsJSON(r.Headers())
		id, err := sessionID(r.Subject())
		if err != nil {
			respondError(r, asJSON, classify(err))
			return
		}
		body := ep.newReq()
		if err := decode(r.Data(), asJSON, body); err != nil {
			respondError(r, asJSON, &Error{Code: 400, Field: "body", Message: "cannot decode " + string(body.ProtoReflect().Descriptor().FullName()) + ": " + err.Error()})
			return
		}
		s.inflight.Add(1)
		err = s.d.Dispatch(id, body, func(reply proto.Message, err error) {
			defer s.inflight.Done()
			if err != nil {
				respondError(r, asJSON, classify(err))
				return
			}
			respond(r, asJSON, reply)
		})
		if err != nil {
			s.inflight.Done()
			respondError(r, asJSON, classify(err))
		}
	}
}

// sessionID extracts and validates <id> of mem.v1.session.<id>.<op>.
func sessionID(subject string) (string, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 {
		return "", &Error{Code: 400, Field: "session_id", Message: "subject must be mem.v1.session.<id>.<op>"}
	}
	if err := events.ValidateID("session_id", parts[3]); err != nil {
		return "", err
	}
	return parts[3], nil
}

// Stop stops taking requests (draining the subscriptions) and waits, bounded
// by ctx, for the replies of those already dispatched.
func (s *Service) Stop(ctx context.Context) error {
	err := s.svc.Stop()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("api: waiting for in-flight requests: %w", ctx.Err()))
	}
	return err
}
