package events

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is; the concrete errors carry
// details (FieldError, ConflictError).
var (
	// ErrInvalidID is returned when an aggregate id, a kind or a subject does
	// not follow the id rule [A-Za-z0-9_-]{1,128}. The concrete error is a
	// *FieldError naming the field.
	ErrInvalidID = errors.New("events: invalid id")

	// ErrConflict is returned by Log.Append when the subject's last sequence is
	// not the expected one: another writer appended first. Nothing was stored.
	// The concrete error is a *ConflictError.
	ErrConflict = errors.New("events: expected last sequence does not match")

	// ErrUnknownOutcome is returned (wrapping the transport error) by
	// Log.Append when no answer came back (timeout, no responders, connection
	// lost): the write may or may not be stored; retry with the same msgID
	// and the same expected sequence, which either stores it or reports the
	// first write as a duplicate.
	ErrUnknownOutcome = errors.New("events: append outcome unknown: the write may or may not be stored; retry with the same msgID")

	// ErrNoStream is returned (wrapped, naming the stream) by the
	// JetStreamLog's Append, Load and LastSeq when the server says the log
	// stream does not exist: it was deleted underneath the node. Nothing
	// recreates it but a node start (see NewJetStreamLog); an Append error
	// also wraps ErrUnknownOutcome.
	ErrNoStream = errors.New("events: the log stream does not exist")

	// ErrUnknownEventType is returned by Codec.Pack and Codec.Unpack for an
	// event whose protobuf full name the codec neither knows nor upcasts.
	ErrUnknownEventType = errors.New("events: unknown event type")

	// ErrMalformed is returned when bytes read from the log do not decode
	// into a valid EventBatch or event.
	ErrMalformed = errors.New("events: malformed data")

	// ErrUnsupportedSchema is returned by DecodeBatch for an envelope written
	// with a newer schema version than this build understands.
	ErrUnsupportedSchema = errors.New("events: unsupported schema version")

	// ErrMigrating is returned by NewJetStreamLog when the log stream is
	// marked MigratingMetadataKey: MigrateAllowDelete (replay migrate-log)
	// was interrupted while filling it and it is not whole. Run the
	// migration again to finish it.
	ErrMigrating = errors.New("events: the log stream is being migrated (replay migrate-log): run it again to finish")

	// ErrMigrateState is returned by MigrateAllowDelete when the streams are
	// in a state it cannot continue from safely (a stream that is not every
	// sequence from 1, a temporary stream that is not a copy of the log, a
	// log marked as migrating without its copy). Nothing was deleted.
	ErrMigrateState = errors.New("events: migrate: unexpected state")

	// ErrMigrateMismatch is returned by MigrateAllowDelete when a copied
	// message did not land at its sequence or differs from the original.
	// Nothing was deleted after it was found.
	ErrMigrateMismatch = errors.New("events: migrate: copy differs from the original")

	// ErrCompacting is returned by NewJetStreamLog and CheckNotMigrating
	// when CompactStream (replay compact) was interrupted where a stream is
	// not whole: it is marked CompactingMetadataKey (being filled again), or
	// it is missing while its copy COMPACT_<stream> exists. Run the
	// compaction again to finish it.
	ErrCompacting = errors.New("events: the stream is being compacted (replay compact): run it again to finish")

	// ErrCompactState is returned by CompactStream when the streams are in
	// a state it cannot continue from safely (a copy that is not of this
	// stream, a stream marked as being filled without its verified copy).
	// Nothing was deleted.
	ErrCompactState = errors.New("events: compact: unexpected state")

	// ErrCompactMismatch is returned by CompactStream when a copy differs
	// from its original (a sequence, subject, header or data). Nothing was
	// deleted after it was found.
	ErrCompactMismatch = errors.New("events: compact: copy differs from the original")

	// ErrInvalidConfig is returned (wrapped) by JetStreamConfig.Validate.
	ErrInvalidConfig = errors.New("events: invalid config")
)

// FieldError says which input field is invalid and why. It matches
// errors.Is(err, ErrInvalidID).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is ErrInvalidID.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidID }

// ConflictError is returned by Log.Append when the expected last sequence of
// Subject was not Expected. It matches errors.Is(err, ErrConflict).
type ConflictError struct {
	Subject  string
	Expected uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("events: conflict on %s: expected last sequence %d does not match", e.Subject, e.Expected)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
