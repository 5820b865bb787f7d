package segmented

import (
	"errors"
	"fmt"
)

// Rejection codes, HTTP-like, as the API reports them.
const (
	CodeBadRequest = 400 // the request is malformed (Validate*)
	CodeNotFound   = 404 // the session, tool, fact, key or summary does not exist
	CodeConflict   = 409 // the request conflicts with the state (status, duplicate id)
	CodeTooLarge   = 413 // the request is too large, or the budget cannot hold it
)

// Rejection is the error Decide* and Validate* return for a refused command.
// A rejected command changes nothing. Test with errors.As.
type Rejection struct {
	Code   int
	Field  string
	Reason string
}

func (r *Rejection) Error() string {
	if r.Field == "" {
		return r.Reason
	}
	return r.Field + ": " + r.Reason
}

// Status returns the code, field and reason (the form the API layer maps
// every model's rejection through).
func (r *Rejection) Status() (code int, field, reason string) { return r.Code, r.Field, r.Reason }

// tooLarge reports whether err is a Rejection with CodeTooLarge. (Its
// own function: the *Rejection errors.As fills escapes to the heap, and
// is made only when there is an error.)
func tooLarge(err error) bool {
	if err == nil {
		return false
	}
	var rej *Rejection
	return errors.As(err, &rej) && rej.Code == CodeTooLarge
}

func reject(code int, field, format string, args ...any) *Rejection {
	return &Rejection{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func badRequest(field, format string, args ...any) *Rejection {
	return reject(CodeBadRequest, field, format, args...)
}
