package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
)

// Error is a failed tool call: the service's HTTP-like code (400 bad
// argument, 403 denied, 404 not found, 409 conflict, 413 too large, 429
// limited, 503 unavailable, 504 no reply in time), the argument or service
// field it concerns (may be empty) and the reason.
type Error struct {
	Code    int    `json:"code"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Message)
}

// JSON is the error as the JSON text given to the LLM:
// {"error":{"code":…,"field":…,"message":…}}.
func (e *Error) JSON() json.RawMessage {
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	return b
}

// AsError returns err as an *Error: itself if it is one, else code 500 with
// its text.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: 500, Message: err.Error()}
}

// fromClient maps an error of a client call to an *Error. target is the
// argument the call addressed ("session_id" or "scope"), named when nothing
// answered: with tenants, a subject the connection's account does not
// import has no responder, exactly like a stopped node.
func fromClient(err error, target string) error {
	var ce *client.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &Error{Code: ce.Code, Field: ce.Field, Message: ce.Message}
	case errors.Is(err, nats.ErrNoResponders):
		return &Error{Code: 503, Field: target, Message: "nothing answered: the node is not running, or this connection may not reach that " + target}
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: 504, Message: "no reply in time: the outcome is unknown (a write may have been applied)"}
	}
	return &Error{Code: 500, Message: err.Error()}
}
