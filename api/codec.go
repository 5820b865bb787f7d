package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/jsonbody"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ContentTypeJSON selects protojson bodies for a request and its reply.
const ContentTypeJSON = "application/json"

// JSON replies use the proto field names (snake_case) and carry every
// field, zero values included (used: 0, duplicate: false, empty lists);
// a message field that is not set is left out. 64-bit integers are JSON
// strings (the protobuf JSON mapping), enums their full names.
var (
	jsonOut = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}
	jsonIn  = protojson.UnmarshalOptions{}
)

func wantsJSON(h nats.Header) bool {
	ct := h.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), ContentTypeJSON)
}

// decode reads a request body. A JSON body is first normalized and checked
// against the message (jsonbody.Read: short enum names, the OpenAI message
// shape, errors that name the field path as sent), then decoded by
// protojson.
func decode(data []byte, asJSON bool, into proto.Message) error {
	if asJSON {
		text, jerr := jsonbody.Read(data, into.ProtoReflect().Descriptor())
		if jerr != nil {
			return &Error{Code: 400, Field: jerr.Field, Message: jerr.Message}
		}
		return jsonIn.Unmarshal(text, into)
	}
	return proto.Unmarshal(data, into)
}

func encode(m proto.Message, asJSON bool) ([]byte, error) {
	if asJSON {
		data, err := jsonOut.Marshal(m)
		if cr, ok := m.(*memoryv1.ContextReply); ok && err == nil && cr.GetRendered() != nil {
			data = jsonbody.ChatShape(data)
		}
		return data, err
	}
	return proto.Marshal(m)
}

// Error is a reply error with an HTTP-like code and the field it is about.
type Error struct {
	Code    int
	Field   string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Field, e.Message) }

// Status is (code, field, message): an *Error is a rejection like the
// actors' and tenancy's, wherever it is classified (an erase skips an
// entry another node answers 404 for).
func (e *Error) Status() (int, string, string) { return e.Code, e.Field, e.Message }

// Classify maps an error from the actors or the model to the API error it
// is answered with (code, field, message), as the service does for every
// reply.
func Classify(err error) *Error {
	var (
		rej interface{ Status() (int, string, string) }
		fe  *events.FieldError
		ae  *Error
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &rej):
		code, field, reason := rej.Status()
		return &Error{Code: code, Field: field, Message: reason}
	case errors.As(err, &fe):
		return &Error{Code: 400, Field: fe.Field, Message: fe.Reason}
	case errors.Is(err, actors.ErrCannotRemove):
		return &Error{Code: 501, Field: "", Message: err.Error()}
	case errors.Is(err, actors.ErrUnavailable), errors.Is(err, actors.ErrClosed), errors.Is(err, actors.ErrIndexUnavailable),
		errors.Is(err, actors.ErrNoAnswer), errors.Is(err, erasure.ErrUnavailable), errors.Is(err, erasure.ErrNoReadModel):
		return &Error{Code: 503, Field: "", Message: err.Error()}
	default:
		return &Error{Code: 500, Field: "", Message: err.Error()}
	}
}

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
		rp.metrics.observe(rp.op, rp.start, hdr)
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

// respondError answers with the micro error headers and an ErrorDetail body.
// A refusal by a limit (429, or 413 naming a max_… limit) is counted by the
// limit's name.
func respondError(rp replier, asJSON bool, e *Error) {
	if (e.Code == 429 || e.Code == 413) && strings.HasPrefix(e.Field, "max_") && rp.metrics != nil {
		rp.metrics.Limited.WithLabelValues(e.Field).Inc()
	}
	desc := e.Message
	if e.Field != "" {
		desc = e.Field + ": " + e.Message
	}
	body, _ := encode(errorDetail(e), asJSON)
	hdr := nats.Header{}
	hdr.Set(micro.ErrorHeader, desc)
	hdr.Set(micro.ErrorCodeHeader, strconv.Itoa(e.Code))
	rp.publish(body, asJSON, hdr)
}

func errorDetail(e *Error) *memoryv1.ErrorDetail {
	return &memoryv1.ErrorDetail{Code: uint32(e.Code), Field: e.Field, Message: e.Message}
}

func respond(rp replier, asJSON bool, m proto.Message) {
	if w, ok := m.(interface {
		GetResult() *memoryv1.MutationReply
	}); ok && rp.acked != nil {
		rp.acked.note(w.GetResult().GetSeq())
	}
	data, err := encode(m, asJSON)
	if err != nil {
		respondError(rp, asJSON, &Error{Code: 500, Message: "encode reply: " + err.Error()})
		return
	}
	rp.publish(data, asJSON, nil)
}

// decodeError is the 400 of a body that does not decode into into: the
// field error jsonbody.Read found, else one about the whole body.
func decodeError(into proto.Message, err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return &Error{Code: 400, Field: "body", Message: "cannot decode " + string(into.ProtoReflect().Descriptor().FullName()) + ": " + err.Error()}
}
