// Package wire is the memory API's encoding, the same whatever transport
// carries it: protobuf bodies, or protojson with Content-Type
// application/json (read through internal/jsonbody, which names the field
// path of every error as sent), and an error as a code, the field it is
// about and a message: an ErrorDetail body and the micro error headers
// (Nats-Service-Error, Nats-Service-Error-Code), which the HTTP API turns
// into its status. A watch reply's page (WatchPage) is cut to what one
// reply carries, its values decoded for a JSON reader.
package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// WantsJSON reports whether headers h ask for JSON bodies.
func WantsJSON(h nats.Header) bool {
	ct := h.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), ContentTypeJSON)
}

// Decode reads a request body into into. A JSON body is first normalized
// and checked against the message (jsonbody.Read: short enum names, the
// OpenAI message shape, errors that name the field path as sent), then
// decoded by protojson. Its error is the 400 to answer.
func Decode(data []byte, asJSON bool, into proto.Message) *Error {
	var err error
	if asJSON {
		text, jerr := jsonbody.Read(data, into.ProtoReflect().Descriptor())
		if jerr != nil {
			return &Error{Code: 400, Field: jerr.Field, Message: jerr.Message}
		}
		err = jsonIn.Unmarshal(text, into)
	} else {
		err = proto.Unmarshal(data, into)
	}
	if err != nil {
		return &Error{Code: 400, Field: "body", Message: "cannot decode " + string(into.ProtoReflect().Descriptor().FullName()) + ": " + err.Error()}
	}
	return nil
}

// Encode writes a reply body (a context's rendered messages as the chat
// API's own shape in JSON).
func Encode(m proto.Message, asJSON bool) ([]byte, error) {
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

// Encode is e's body and headers.
func (e *Error) Encode(asJSON bool) ([]byte, nats.Header) {
	desc := e.Message
	if e.Field != "" {
		desc = e.Field + ": " + e.Message
	}
	body, _ := Encode(&memoryv1.ErrorDetail{Code: uint32(e.Code), Field: e.Field, Message: e.Message}, asJSON)
	hdr := nats.Header{}
	hdr.Set(micro.ErrorHeader, desc)
	hdr.Set(micro.ErrorCodeHeader, strconv.Itoa(e.Code))
	return body, hdr
}

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
