package api

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/tenancy"
)

// request is one API request as the operations see it, whatever carried it:
// a NATS request (micro.Request), a request another node forwarded
// (forwardedRequest) or one served with Do (localRequest, the HTTP API). It
// holds no way to answer: every answer goes through a replier (replyTo), so
// limits, identity, errors and forwarding have one path for every
// transport.
type request interface {
	// Subject is the operation's subject (mem.v1.session.s1.append).
	Subject() string
	// Data is the body: protobuf, or JSON with Content-Type application/json.
	Data() []byte
	// Headers are read for Content-Type and, for a NATS request, the
	// identity the server stamped (Nats-Request-Info).
	Headers() micro.Headers
	// Reply is the NATS reply subject ("" for a request served with Do).
	Reply() string
}

// timedRequest is a request with the operation it is for and its arrival
// time: its replier counts and times the reply (Metrics.Requests, Latency).
type timedRequest struct {
	request
	op    string
	start time.Time
}

// natsHandler adapts a handler of requests to a micro endpoint.
func natsHandler(h func(request)) micro.HandlerFunc {
	return func(r micro.Request) { h(r) }
}

// localRequest is a request served with Do: its reply is delivered to a
// channel instead of a NATS subject, and its caller is the one its
// transport verified (who), not read from a header.
type localRequest struct {
	subject string
	data    []byte
	header  nats.Header
	who     *tenancy.Caller
	replies chan Reply
	// ctx is Do's: it ends when the requester stops waiting for the reply.
	ctx context.Context
}

// localOf returns the request served with Do that r is (under its timing).
func localOf(r request) (*localRequest, bool) {
	if t, ok := r.(timedRequest); ok {
		r = t.request
	}
	l, ok := r.(*localRequest)
	return l, ok
}

func (l *localRequest) Subject() string        { return l.subject }
func (l *localRequest) Data() []byte           { return l.data }
func (l *localRequest) Headers() micro.Headers { return micro.Headers(l.header) }
func (l *localRequest) Reply() string          { return "" }

// requesterContext returns a context that ends when r's requester stops
// waiting for the reply, if its transport can tell: a request served with
// Do (an HTTP client that went away). A NATS requester leaves silently:
// for it, and a request forwarded from another node, it returns nil.
func requesterContext(r request) context.Context {
	for {
		switch x := r.(type) {
		case timedRequest:
			r = x.request
		case *localRequest:
			return x.ctx
		default:
			return nil
		}
	}
}

// deliver takes the request's one reply (a second is dropped: every path
// answers once).
func (l *localRequest) deliver(data []byte, hdr nats.Header) {
	select {
	case l.replies <- Reply{Data: data, Header: hdr}:
	default:
	}
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

// Do serves one request without NATS: the same route table, guards,
// limits, errors and cluster forwarding as a JSON request on subject over
// NATS, the reply returned instead of published. data is JSON. who is the
// caller as the transport verified it (the HTTP API: from a bearer token,
// tenancy.Directory.TokenCaller); nil is the single-user node's caller, and
// refused (403 identity) on a node with tenants. Forwarded to the node that
// serves the aggregate, the request carries who's identity for that node to
// check again. It returns ctx's error if ctx ends before the reply (the
// operation may still complete: retry with the same command id).
func (s *Service) Do(ctx context.Context, subject string, data []byte, who *tenancy.Caller) (Reply, error) {
	hdr := nats.Header{}
	hdr.Set("Content-Type", ContentTypeJSON)
	l := &localRequest{subject: subject, data: data, header: hdr, who: who, replies: make(chan Reply, 1), ctx: ctx}
	rt, ok := s.routes.find(subject)
	switch {
	case ok:
		rt.h(l)
	default:
		s.unknownOp(l)
	}
	select {
	case r := <-l.replies:
		return r, nil
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}

// unknownOp answers a subject no route serves: the 404 of its prefix's
// catch-all (naming the valid operations) when one matches, else a 404
// naming the subject.
func (s *Service) unknownOp(l *localRequest) {
	st := strings.Split(l.subject, ".")
	for _, o := range s.routes.other {
		if o.pattern.matches(st) && o.unknown != nil {
			o.unknown(l)
			return
		}
	}
	respondError(s.replyTo(l), wantsJSON(l.Headers()), &Error{Code: 404, Field: "operation", Message: "no endpoint for " + l.subject})
}
