package api

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api/wire"
)

// Writing replies: the encoding is package wire's, the same for every
// transport; here a reply is counted, timed, and handed to its transport.

// ContentTypeJSON selects protojson bodies for a request and its reply.
const ContentTypeJSON = wire.ContentTypeJSON

// Error is a reply error with an HTTP-like code and the field it is about
// (wire.Error).
type Error = wire.Error

// Classify maps an error from the actors or the model to the API error it
// is answered with (wire.Classify).
func Classify(err error) *Error { return wire.Classify(err) }

func wantsJSON(h nats.Header) bool { return wire.WantsJSON(h) }

// replier answers one request through its transport (Request.Write).
// Unlike micro.Request, it is safe to use from any goroutine after the
// handler returned (micro's handler reads the request's state once it
// returns, so answering through it from an actor would race).
type replier struct {
	write   func(data []byte, hdr nats.Header)
	metrics *Metrics
	// op and start time the request (op "" for one not timed: a request
	// another node forwarded here is timed where it arrived).
	op    string
	start time.Time
	// acked keeps the highest stream sequence of a write this service
	// answered (a min_seq up to it is one the log holds).
	acked *atomicMax
}

// replyTo is the replier of r, timing it as op from start.
func (s *Service) replyTo(r *Request, op string, start time.Time) replier {
	return replier{write: r.Write, metrics: s.metrics, acked: &s.acked, op: op, start: start}
}

func (rp replier) publish(data []byte, asJSON bool, hdr nats.Header) {
	if rp.op != "" && rp.metrics != nil {
		rp.metrics.Observe(rp.op, rp.start, hdr)
	}
	if rp.write == nil {
		return // a publish without a reply subject: nobody to answer
	}
	if asJSON {
		if hdr == nil {
			hdr = nats.Header{}
		}
		hdr.Set("Content-Type", ContentTypeJSON)
	}
	rp.write(data, hdr)
}

// respondError answers e: an ErrorDetail body and the micro error
// headers. A refusal by a limit (429, or 413 naming a max_… limit) is
// counted by the limit's name.
func respondError(rp replier, asJSON bool, e *Error) {
	if (e.Code == 429 || e.Code == 413) && strings.HasPrefix(e.Field, "max_") && rp.metrics != nil {
		rp.metrics.Limited.WithLabelValues(e.Field).Inc()
	}
	body, hdr := e.Encode(asJSON)
	rp.publish(body, asJSON, hdr)
}

func respond(rp replier, asJSON bool, m proto.Message) {
	if w, ok := m.(mutationResult); ok && rp.acked != nil {
		rp.acked.note(w.GetResult().GetSeq())
	}
	data, err := wire.Encode(m, asJSON)
	if err != nil {
		respondError(rp, asJSON, &Error{Code: 500, Message: "encode reply: " + err.Error()})
		return
	}
	rp.publish(data, asJSON, nil)
}

// atomicMax is a counter that only rises (safe for concurrent use).
type atomicMax struct{ v atomic.Uint64 }

func (m *atomicMax) note(v uint64) {
	for {
		cur := m.v.Load()
		if v <= cur || m.v.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (m *atomicMax) load() uint64 { return m.v.Load() }
