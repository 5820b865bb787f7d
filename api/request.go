package api

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/tenancy"
)

// Request is one request as a transport hands it to the service (Serve,
// Handler): a NATS request (package natsapi), one the HTTP API serves with
// Do, or one another node forwarded (ServeForwarded). The service answers
// through Write alone, so limits, identity, errors and forwarding have one
// path whatever carried the request.
type Request struct {
	// Subject is the operation's subject (mem.v1.session.s1.append).
	Subject string
	// Data is the body: protobuf, or JSON with Content-Type application/json.
	Data []byte
	// Header is read for Content-Type and, when Caller is nil, for the
	// identity the NATS server stamped (Nats-Request-Info).
	Header nats.Header
	// Caller is the caller as its transport verified it (HTTP: a bearer
	// token); nil: identified from Header.
	Caller *tenancy.Caller
	// Write publishes the one answer (nil: a publish nobody waits on).
	Write func(data []byte, hdr nats.Header)
	// Gone ends when the requester stops waiting, if its transport can
	// tell (an HTTP client that went away); nil when it cannot (a NATS
	// requester leaves silently).
	Gone context.Context
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
func (s *Service) Do(ctx context.Context, subject string, data []byte, who *tenancy.Caller) (Reply, error) {
	hdr := nats.Header{}
	hdr.Set("Content-Type", ContentTypeJSON)
	replies := make(chan Reply, 1)
	s.Serve(&Request{Subject: subject, Data: data, Header: hdr, Caller: who, Gone: ctx,
		Write: func(data []byte, hdr nats.Header) {
			select { // every path answers once; a second is dropped
			case replies <- Reply{Data: data, Header: hdr}:
			default:
			}
		}})
	select {
	case r := <-replies:
		return r, nil
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}
