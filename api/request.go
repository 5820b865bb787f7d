package api

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/tenancy"
)

// Request is one request as a transport hands it to the dispatcher
// (package dispatch), and the dispatcher to the service (Run): a NATS
// request (package natsapi), one the HTTP API serves (Do), or one another
// node forwarded. It is answered through Write alone, so limits, identity,
// errors and forwarding have one path whatever carried the request.
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
	// Flush returns once what Write handed its transport has left this
	// node's hands (NATS: the server has taken it; nil: Write itself
	// delivers it). Work that follows an answer and need not precede the
	// next request waits for it, so the answer does not wait for the
	// work's CPU (the context assembler's searches).
	Flush func(ctx context.Context) error
	// Gone ends when the requester stops waiting, if its transport can
	// tell (an HTTP client that went away); nil when it cannot (a NATS
	// requester leaves silently).
	Gone context.Context
}
