package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/tenancy"
)

// The dispatcher: every transport hands its requests here (Serve, or
// Handler for a transport that routes by operation itself), and here they
// find their operation in the table, are forwarded to the node that serves
// their aggregate, are told who sent them and whether that caller may
// call the operation (operation.access), then served.

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

// route is how the dispatcher serves one operation, or answers a subject
// that is none (malformed, unknown).
type route struct {
	name string // the operation's name, under which it is timed
	// placed: the subject names an aggregate a cluster places on one node.
	placed bool
	op     *operation // nil for the answers to subjects that are no operation
	h      func(*call)
}

type opKey struct{ family, op string }

// routeTable finds the route of a subject (fixed once New returns).
type routeTable struct {
	byOp   map[opKey]*route
	byName map[string]*route
	// ops are the operations served in each family, sorted: an unknown one
	// under a family that has some answers 404 naming them.
	ops map[string][]string
	// unknown answers that 404; malformed answers a subject whose id has
	// dots, by family (nil: none of its operations is served).
	unknown   *route
	malformed map[string]*route
}

// shapes are what an unknown operation's 404 says a family's subjects
// look like; only these families name their operations (user and tools
// answer "no endpoint").
var shapes = map[string]string{
	subject.Session: "mem.v1.session.<id>", subject.Sessions: "mem.v1.sessions", subject.Agent: "mem.v1.agent.<id>",
	subject.Scope: "mem.v1.scope.<kind>.<id>", subject.Data: "mem.v1.data",
}

// newRoutes builds the routes of the operations s serves.
func (s *Service) newRoutes() *routeTable {
	t := &routeTable{byOp: map[opKey]*route{}, byName: map[string]*route{}, ops: map[string][]string{}, malformed: map[string]*route{}}
	byFamily := map[string]map[string]bool{}
	for i := range operations {
		op := &operations[i]
		if !s.serves(op.needs) {
			continue
		}
		p, err := subject.Parse(op.subject)
		if err != nil {
			panic("api: operation " + op.name + ": " + err.Error())
		}
		_, placed := p.Aggregate()
		rt := &route{name: op.name, placed: placed, op: op, h: op.serve(s)}
		t.byOp[opKey{p.Family, p.Op}], t.byName[op.name] = rt, rt
		if byFamily[p.Family] == nil {
			byFamily[p.Family] = map[string]bool{}
		}
		byFamily[p.Family][p.Op] = true
	}
	for f, ops := range byFamily {
		if _, ok := shapes[f]; ok {
			t.ops[f] = slices.Sorted(maps.Keys(ops))
		}
	}
	t.unknown = &route{name: "unknown", h: func(c *call) {
		sj := c.r.Subject
		f, _, _ := strings.Cut(strings.TrimPrefix(sj, subject.Prefix), ".")
		c.fail(&Error{Code: 404, Field: "operation", Message: fmt.Sprintf("unknown operation %q; %s.{%s}",
			sj[strings.LastIndexByte(sj, '.')+1:], shapes[f], strings.Join(t.ops[f], ","))})
	}}
	// An id with dots splits into more subject tokens and would match no
	// operation: those are answered 400 instead of 404 (or, over NATS, no
	// responders, which looks like the node is down).
	t.malformed[subject.Session] = &route{name: "session_malformed", h: func(c *call) {
		c.fail(&Error{Code: 400, Field: "session_id",
			Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject mem.v1.session.<id>.<op>"})
	}}
	if byFamily[subject.Agent] != nil {
		for _, f := range []string{subject.Agent, subject.Scope} {
			t.malformed[f] = &route{name: f + "_malformed", h: func(c *call) {
				c.fail(&Error{Code: 400, Field: "id", Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject"})
			}}
		}
	}
	return t
}

// idTokens is how many subject tokens a family's operations have
// (families without an id are never malformed by one).
var idTokens = map[string]int{subject.Session: 5, subject.Agent: 5, subject.Scope: 6}

// find returns the route of subject s: its operation's, the unknown
// operation's of a family that has operations, the malformed subject's of
// one whose id had dots; nil for a subject no route answers.
func (t *routeTable) find(s string) *route {
	p, err := subject.Parse(s)
	if err == nil {
		if rt := t.byOp[opKey{p.Family, p.Op}]; rt != nil {
			return rt
		}
		if len(t.ops[p.Family]) > 0 {
			return t.unknown
		}
		return nil
	}
	f, _, _ := strings.Cut(strings.TrimPrefix(s, subject.Prefix), ".")
	if n, ok := idTokens[f]; ok && strings.HasPrefix(s, subject.Prefix) && strings.Count(s, ".")+1 > n {
		return t.malformed[f]
	}
	return nil
}

// Serve serves one request: the operation its subject names (or the 400
// or 404 of a subject that names none).
func (s *Service) Serve(r *Request) {
	rt := s.routes.find(r.Subject)
	if rt == nil {
		respondError(s.replyTo(r, "", time.Time{}), wantsJSON(r.Header), &Error{Code: 404, Field: "operation", Message: "no endpoint for " + r.Subject})
		return
	}
	s.enter(rt, r)
}

// Handler is Serve for the requests of operation name, for a transport
// that routes by operation itself (a NATS endpoint per operation); nil
// for an operation this service does not serve.
func (s *Service) Handler(name string) func(*Request) {
	rt := s.routes.byName[name]
	if rt == nil {
		return nil
	}
	return func(r *Request) { s.enter(rt, r) }
}

// MalformedHandler is Serve for the subjects of family whose id has dots
// (nil when the family has none to answer): a transport that subscribes
// by pattern answers them instead of leaving them to no responder.
func (s *Service) MalformedHandler(family string) func(*Request) {
	rt := s.routes.malformed[family]
	if rt == nil {
		return nil
	}
	return func(r *Request) { s.enter(rt, r) }
}

// enter times a request from now and serves it here, or, with a Router,
// on the node that serves its aggregate (one node serves each
// aggregate's reads and writes).
func (s *Service) enter(rt *route, r *Request) {
	start := time.Now()
	if rt.placed && s.router != nil {
		if id, ok := aggregateOf(r.Subject); ok && !s.router.Serves(id) {
			s.forward(r, id, rt.name, start, func() { s.serve(r, rt, rt.name, start) })
			return
		}
	}
	s.serve(r, rt, rt.name, start)
}

// serve establishes the caller, checks it may call the operation (its
// declared access: authorizeNow), then runs the route: the caller r's transport verified, else the Unrestricted
// caller without tenants, else the principal the server-stamped identity
// maps to (403 when there is none). op and start time the reply (op "":
// not timed).
func (s *Service) serve(r *Request, rt *route, op string, start time.Time) {
	c := &call{r: r, rp: s.replyTo(r, op, start), asJSON: wantsJSON(r.Header), route: rt}
	switch {
	case r.Caller != nil:
		c.who = r.Caller // verified by its transport
	case s.tenants == nil:
		c.who = s.anyone
	default:
		who, err := s.tenants.Identify(r.Header)
		if err != nil {
			s.metrics.Denied.WithLabelValues("identity").Inc()
			c.fail(err)
			return
		}
		c.who = who
	}
	c.subj, _ = subject.Parse(r.Subject)
	if rt.op != nil {
		later, err := s.authorizeNow(c)
		if err != nil {
			c.fail(err)
			return
		}
		c.later = later
	}
	rt.h(c)
}

// Dropped counts and logs a request a transport dropped unanswered: its
// reply subject is none the node answers (why says which).
func (s *Service) Dropped(why, subject, reply string) {
	s.metrics.RefusedReplies.Inc()
	s.logger.Warn(why, "subject", subject, "reply", reply)
}
