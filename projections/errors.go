package projections

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is / errors.As.
var (
	// ErrSchemaVersion is returned by Open when the file was written with
	// another SchemaVersion; the message names both versions.
	ErrSchemaVersion = errors.New("projections: schema version mismatch")

	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("projections: store closed")

	// ErrNotCaughtUp is returned (wrapping the context's error) by
	// Projector.WaitFor when the projection did not apply the sequence before
	// the context ended. It says nothing about the write itself: it is in the
	// log, the projection is behind.
	ErrNotCaughtUp = errors.New("projections: projection has not applied the sequence yet")

	// ErrInvalidArgument is returned (wrapped in an *ArgumentError) by queries
	// given an out-of-range limit, a bad page token or conflicting filters.
	ErrInvalidArgument = errors.New("projections: invalid argument")

	// ErrCorrupt is returned (wrapped) by a query that reads a value whose
	// layout does not match the schema.
	ErrCorrupt = errors.New("projections: corrupt value")

	// ErrInvalidConfig is returned (wrapped) by Config.Validate.
	ErrInvalidConfig = errors.New("projections: invalid config")

	// ErrApply is returned (wrapped in an *ApplyError) when a stored record
	// cannot be applied: undecodable batch, unknown event type, an event for
	// a session that does not exist. The projector stops on it: it never
	// skips a record.
	ErrApply = errors.New("projections: cannot apply record")
)

// NotFoundError is returned by MessagesByID for a message id the session's
// swap does not hold.
type NotFoundError struct {
	ID string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("projections: message %q not found", e.ID) }

// ArgumentError names the query field that is invalid. It matches
// errors.Is(err, ErrInvalidArgument).
type ArgumentError struct {
	Field  string
	Reason string
}

func (e *ArgumentError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is ErrInvalidArgument.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// ApplyError says which stream record could not be applied and why. It
// matches errors.Is(err, ErrApply) and unwraps to the cause (for example
// events.ErrMalformed or events.ErrUnknownEventType).
type ApplyError struct {
	Stream  string
	Seq     uint64
	Subject string
	Err     error
}

func (e *ApplyError) Error() string {
	s := e.Stream
	if s == "" {
		s = "log"
	}
	return fmt.Sprintf("projections: %s sequence %d (%s): %v", s, e.Seq, e.Subject, e.Err)
}

// Unwrap returns ErrApply and the cause.
func (e *ApplyError) Unwrap() []error { return []error{ErrApply, e.Err} }
