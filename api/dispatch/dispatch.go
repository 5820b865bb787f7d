// Package dispatch finds the operation and the node of every request a
// transport carries, and who sent it: both transports (natsapi over NATS,
// httpapi over HTTP, through Do) hand their requests here, so both serve
// exactly the operation table of package api, with one answer to an
// unknown operation or a malformed subject, one identity rule and one
// cluster forwarding. The operations themselves, and the check of who may
// call each, are package api's (api.Service.Run).
package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/tenancy"
)

// Dispatcher dispatches the requests of one service (fixed once New
// returns). It is the service as a transport sees it: Operations, Tenants,
// Version and the rest come from the service.
type Dispatcher struct {
	*api.Service
	byOp   map[opKey]string // operation name by family and operation
	placed map[string]bool  // operations whose subject names an aggregate a cluster places
	// ops are the operations served in each family, sorted: an unknown one
	// under a family that has some answers 404 naming them.
	ops map[string][]string
}

type opKey struct{ family, op string }

// shapes are what an unknown operation's 404 says a family's subjects
// look like; only these families name their operations (user and tools
// answer "no endpoint").
var shapes = map[string]string{
	subject.Session: "mem.v1.session.<id>", subject.Sessions: "mem.v1.sessions", subject.Agent: "mem.v1.agent.<id>",
	subject.Scope: "mem.v1.scope.<kind>.<id>", subject.Data: "mem.v1.data",
}

// New returns the dispatcher of svc's operations.
func New(svc *api.Service) *Dispatcher {
	d := &Dispatcher{Service: svc, byOp: map[opKey]string{}, placed: map[string]bool{}, ops: map[string][]string{}}
	byFamily := map[string][]string{} // the operations of each family
	for _, op := range svc.Operations() {
		p, err := subject.Parse(op.Subject)
		if err != nil {
			panic("dispatch: operation " + op.Name + ": " + err.Error())
		}
		d.byOp[opKey{p.Family, p.Op}] = op.Name
		_, d.placed[op.Name] = p.Aggregate()
		byFamily[p.Family] = append(byFamily[p.Family], p.Op)
	}
	for f, ops := range byFamily {
		if _, ok := shapes[f]; ok {
			slices.Sort(ops)
			d.ops[f] = ops
		}
	}
	return d
}

// answer is how the dispatcher serves a subject that names no operation
// (it is timed under name).
type answer struct {
	name string
	err  *api.Error
}

// idTokens is how many subject tokens a family's operations have
// (families without an id are never malformed by one).
var idTokens = map[string]int{subject.Session: 5, subject.Agent: 5, subject.Scope: 6}

// find returns the operation of subject s, or how to answer s instead: a
// family that has operations names them (404 unknown operation); an id
// with dots splits into more subject tokens and would match no operation,
// so those are answered 400 (over NATS instead of no responders, which
// looks like the node is down); nil for a subject nothing answers.
func (d *Dispatcher) find(s string) (string, *answer) {
	p, err := subject.Parse(s)
	if err == nil {
		if name, ok := d.byOp[opKey{p.Family, p.Op}]; ok {
			return name, nil
		}
		if ops := d.ops[p.Family]; len(ops) > 0 {
			return "", &answer{"unknown", &api.Error{Code: 404, Field: "operation", Message: fmt.Sprintf("unknown operation %q; %s.{%s}",
				s[strings.LastIndexByte(s, '.')+1:], shapes[p.Family], strings.Join(ops, ","))}}
		}
		return "", nil
	}
	f, _, _ := strings.Cut(strings.TrimPrefix(s, subject.Prefix), ".")
	if n, ok := idTokens[f]; !ok || !strings.HasPrefix(s, subject.Prefix) || strings.Count(s, ".")+1 <= n {
		return "", nil
	}
	return "", d.malformed(f)
}

// malformed is the answer to a subject of family whose id has dots (nil
// when none of the family's operations is served).
func (d *Dispatcher) malformed(family string) *answer {
	switch {
	case family == subject.Session:
		return &answer{"session_malformed", &api.Error{Code: 400, Field: "session_id",
			Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject mem.v1.session.<id>.<op>"}}
	case len(d.ops[subject.Agent]) > 0 && (family == subject.Agent || family == subject.Scope):
		return &answer{family + "_malformed", &api.Error{Code: 400, Field: "id", Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject"}}
	}
	return nil
}

// Serve serves one request: the operation its subject names (or the 400
// or 404 of a subject that names none).
func (d *Dispatcher) Serve(r *api.Request) {
	name, a := d.find(r.Subject)
	switch {
	case name != "":
		d.enter(name, r)
	case a != nil:
		d.refuse(a, r)
	default:
		d.Answer(r, "", time.Time{}).Fail(&api.Error{Code: 404, Field: "operation", Message: "no endpoint for " + r.Subject})
	}
}

// Handler is Serve for the requests of operation name, for a transport
// that routes by operation itself (a NATS endpoint per operation).
func (d *Dispatcher) Handler(name string) func(*api.Request) {
	return func(r *api.Request) { d.enter(name, r) }
}

// MalformedHandler is Serve for the subjects of family whose id has dots
// (nil when the family has none to answer): a transport that subscribes
// by pattern answers them instead of leaving them to no responder.
func (d *Dispatcher) MalformedHandler(family string) func(*api.Request) {
	a := d.malformed(family)
	if a == nil {
		return nil
	}
	return func(r *api.Request) { d.refuse(a, r) }
}

// refuse answers a, once the caller is known (an unknown caller learns
// nothing of the operations: 403 first).
func (d *Dispatcher) refuse(a *answer, r *api.Request) {
	start := time.Now()
	if _, ok := d.identify(r, a.name, start); ok {
		d.Answer(r, a.name, start).Fail(a.err)
	}
}

// enter times a request from now and serves it here, or, with a Router,
// on the node that serves its aggregate (one node serves each
// aggregate's reads and writes).
func (d *Dispatcher) enter(name string, r *api.Request) {
	start := time.Now()
	if d.placed[name] && d.Router() != nil {
		if id, ok := aggregateOf(r.Subject); ok && !d.Router().Serves(id) {
			d.forward(r, id, name, start, func() { d.serve(name, r, name, start) })
			return
		}
	}
	d.serve(name, r, name, start)
}

// serve runs operation name for r's caller (api.Service.Run).
func (d *Dispatcher) serve(name string, r *api.Request, timedAs string, start time.Time) {
	if who, ok := d.identify(r, timedAs, start); ok {
		d.Run(name, r, who, timedAs, start)
	}
}

// identify returns r's caller: the one its transport verified, else the
// Unrestricted caller without tenants, else the principal the
// server-stamped identity maps to. When there is none it answers 403 and
// reports false.
func (d *Dispatcher) identify(r *api.Request, timedAs string, start time.Time) (*tenancy.Caller, bool) {
	switch {
	case r.Caller != nil:
		return r.Caller, true // verified by its transport
	case d.Tenants() == nil:
		return d.Anyone(), true
	}
	who, err := d.Tenants().Identify(r.Header)
	if err != nil {
		d.Denied("identity")
		d.Answer(r, timedAs, start).Fail(err)
		return nil, false
	}
	return who, true
}

// Reply is the answer to a request served with Do: the body and the headers
// a NATS requester would get (Content-Type; on an error
// Nats-Service-Error-Code and Nats-Service-Error, and the body is an
// ErrorDetail).
type Reply struct {
	Data   []byte
	Header nats.Header
}

// Code is the reply's error code, 0 when it is no error.
func (r Reply) Code() int {
	c, _ := strconv.Atoi(r.Header.Get(micro.ErrorCodeHeader))
	return c
}

// Do serves one JSON request on subject and returns its reply: the same
// operation table, limits, errors and cluster forwarding as a JSON request
// over NATS. who is the caller as the transport verified it (the HTTP API:
// from a bearer token, tenancy.Directory.TokenCaller); nil is the
// single-user node's caller, and refused (403 identity) on a node with
// tenants. Forwarded to the node that serves the aggregate, the request
// carries who's identity for that node to check again. It returns ctx's
// error if ctx ends before the reply (the operation may still complete:
// retry with the same command id).
func (d *Dispatcher) Do(ctx context.Context, subject string, data []byte, who *tenancy.Caller) (Reply, error) {
	hdr := nats.Header{}
	hdr.Set("Content-Type", api.ContentTypeJSON)
	replies, taken := make(chan Reply, 1), make(chan struct{})
	d.Serve(&api.Request{Subject: subject, Data: data, Header: hdr, Caller: who, Gone: ctx,
		Write: func(data []byte, hdr nats.Header) {
			select { // every path answers once; a second is dropped
			case replies <- Reply{Data: data, Header: hdr}:
			default:
			}
		},
		// The reply has left once Do's caller has it (or has gone).
		Flush: func(fctx context.Context) error {
			select {
			case <-taken:
				return nil
			case <-ctx.Done():
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		}})
	select {
	case r := <-replies:
		close(taken)
		return r, nil
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}
