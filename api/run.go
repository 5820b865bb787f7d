package api

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/tenancy"
)

// What a dispatcher (package dispatch) needs of the service: to run an
// operation for a caller it identified, and to answer, count and time the
// requests it answers itself (an unknown operation, a refused caller, a
// reply relayed from the node that served it).

// call is one request being served: where its answer goes, in which
// encoding, who sent it (verified), its subject read, and its route.
type call struct {
	r      *Request
	rp     replier
	asJSON bool
	who    *tenancy.Caller
	subj   subject.Subject
	route  *route
	// later: the caller's access to the target is checked in the
	// operation's goroutine (authorized), not yet.
	later bool
}

// fail answers the request with err (classified).
func (c *call) fail(err error) { respondError(c.rp, c.asJSON, Classify(err)) }

// route is how the service serves one operation.
type route struct {
	op *operation
	h  func(*call)
}

// newRoutes builds the routes of the operations s serves, by name.
func (s *Service) newRoutes() map[string]*route {
	out := map[string]*route{}
	for i := range operations {
		if op := &operations[i]; s.serves(op.needs) {
			out[op.name] = &route{op: op, h: op.serve(s)}
		}
	}
	return out
}

// Run serves r as operation name (one of Operations) for who, the caller
// its dispatcher identified: it checks who may call it (its declared
// access: authorizeNow), then runs its handler. The reply is timed as
// name from start (name "" untimed: a request another node forwarded is
// timed where it arrived).
func (s *Service) Run(name string, r *Request, who *tenancy.Caller, timedAs string, start time.Time) {
	rt := s.routes[name]
	c := &call{r: r, rp: s.replyTo(r, timedAs, start), asJSON: wantsJSON(r.Header), route: rt, who: who}
	if rt == nil {
		c.fail(&Error{Code: 404, Field: "operation", Message: "no endpoint for " + r.Subject})
		return
	}
	c.subj, _ = subject.Parse(r.Subject)
	later, err := s.authorizeNow(c)
	if err != nil {
		c.fail(err)
		return
	}
	c.later = later
	rt.h(c)
}

// Answer answers one request on the dispatcher's behalf, timed as op from
// start (op "": untimed).
type Answer struct {
	s      *Service
	rp     replier
	asJSON bool
}

// Answer returns the Answer of r.
func (s *Service) Answer(r *Request, op string, start time.Time) Answer {
	return Answer{s: s, rp: s.replyTo(r, op, start), asJSON: wantsJSON(r.Header)}
}

// Fail answers err (classified).
func (a Answer) Fail(err error) { respondError(a.rp, a.asJSON, Classify(err)) }

// Relay answers a reply as it came from the node that served the request:
// its body and headers, the Content-Type and error headers included.
func (a Answer) Relay(data []byte, hdr nats.Header) { a.rp.publish(data, false, hdr) }

// Begin counts one request in flight (Stop waits for it) until Done,
// unless the service stopped: then it answers 503 and reports false.
func (a Answer) Begin() bool { return a.s.begin(a.rp, a.asJSON) }

// Done ends a request Begin counted.
func (s *Service) Done() { s.inflight.Done() }

// Context ends when the service stops.
func (s *Service) Context() context.Context { return s.ctx }

// Anyone is the caller of every request on a node without tenants.
func (s *Service) Anyone() *tenancy.Caller { return s.anyone }

// Router places aggregates on the nodes (nil: this node serves every one).
func (s *Service) Router() Router { return s.router }

// ForwardTimeout bounds a request forwarded to the node that serves its
// aggregate.
func (s *Service) ForwardTimeout() time.Duration { return s.cfg.ForwardTimeout }

// Metrics are the service's instruments.
func (s *Service) Metrics() *Metrics { return s.metrics }

// Dropped counts and logs a request a transport dropped unanswered: its
// reply subject is none the node answers (why says which).
func (s *Service) Dropped(why, subject, reply string) {
	s.metrics.RefusedReplies.Inc()
	s.logger.Warn(why, "subject", subject, "reply", reply)
}
