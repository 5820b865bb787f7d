package sharedmem

import (
	"errors"
	"fmt"
)

// Rejection codes, HTTP-like, as the API reports them.
const (
	CodeBadRequest = 400 // the request is malformed
	CodeNotFound   = 404 // the key or version does not exist (or is not live)
	CodeConflict   = 409 // the expected version does not match
	CodeTooLarge   = 413 // the value is larger than MaxValueBytes
)

// Rejection is the error Decide*, the reads and the validators return for a
// refused request. A rejected command changes nothing. Test with errors.As.
type Rejection struct {
	Code   int
	Field  string
	Reason string
}

// Status returns the code, field and reason (the form the API layer maps
// every model's rejection through).
func (r *Rejection) Status() (code int, field, reason string) { return r.Code, r.Field, r.Reason }

func (r *Rejection) Error() string {
	if r.Field == "" {
		return r.Reason
	}
	return r.Field + ": " + r.Reason
}

func reject(code int, field, format string, args ...any) *Rejection {
	return &Rejection{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func badRequest(field, format string, args ...any) *Rejection {
	return reject(CodeBadRequest, field, format, args...)
}

func notFound(field, format string, args ...any) *Rejection {
	return reject(CodeNotFound, field, format, args...)
}

// ErrApply is wrapped by every error Apply returns: the events do not fit
// the state (a corrupt or reordered log). The state is then unchanged.
var ErrApply = errors.New("sharedmem: cannot apply event")

// ErrCorruptValue is wrapped by the error DecodeValue (and Plain, and the
// reads) return when a stored value does not decode to its recorded size.
var ErrCorruptValue = errors.New("sharedmem: corrupt value")
