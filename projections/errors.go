package projections

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
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

	// ErrStreamNotFound is returned (wrapped) by Rebuild when the log's
	// stream does not exist, or was deleted while Rebuild read it.
	ErrStreamNotFound = errors.New("projections: stream not found")

	// ErrLogGap is returned (wrapped) by Rebuild when sequences between the
	// stream's first and last are missing (a purge by subject, for
	// example): a projection rebuilt without them would silently lack
	// their effects. The message names the missing sequences and the
	// stream's first and last sequence.
	ErrLogGap = errors.New("projections: stream has a gap")

	// ErrLogTruncated is returned (wrapped) by Rebuild when the stream no
	// longer starts at sequence 1: its head was purged.
	ErrLogTruncated = errors.New("projections: stream head purged")

	// ErrLogStalled is returned (wrapped) by Rebuild when no message
	// arrived for its idle timeout while sequences up to the last one were
	// still expected, and neither a deleted stream nor a missing sequence
	// explains it. The message names the sequence waited for.
	ErrLogStalled = errors.New("projections: reading the stream stalled")

	// ErrApply is returned (wrapped in an *ApplyError) when a stored record
	// cannot be applied: undecodable batch, unknown event type, an event for
	// a session that does not exist. The projector stops on it: it never
	// skips a record.
	ErrApply = errors.New("projections: cannot apply record")
)

// logError is an error about the log's shape: msg says it all (stream,
// sequences, state) and it matches kind (ErrStreamNotFound, ErrLogGap,
// ErrLogTruncated, ErrLogStalled).
type logError struct {
	kind error
	msg  string
}

func (e *logError) Error() string { return e.msg }
func (e *logError) Unwrap() error { return e.kind }

// Is makes a missing stream match jetstream.ErrStreamNotFound too, whoever
// noticed it (the bounded read or a stream check): callers that ask the
// JetStream question (streamGone, the node's start check) get one answer.
func (e *logError) Is(target error) bool {
	return e.kind == ErrStreamNotFound && target == jetstream.ErrStreamNotFound
}

func newLogError(kind error, format string, args ...any) error {
	return &logError{kind: kind, msg: "projections: " + fmt.Sprintf(format, args...)}
}

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
