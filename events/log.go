package events

import (
	"context"
	"time"
)

// Record is one stored message of the log: one EventBatch of one aggregate.
type Record struct {
	Subject string
	// Seq is the stream sequence: increasing across the whole log, so the
	// sequences of one subject are increasing but not contiguous.
	Seq  uint64
	Time time.Time
	Data []byte
}

// AppendResult is the outcome of a successful Append.
type AppendResult struct {
	// Seq is the stream sequence of the stored message (of the original one
	// when Duplicate).
	Seq uint64
	// Duplicate is true when msgID was already stored: nothing was added.
	Duplicate bool
}

// Log is the event log: one subject per aggregate, optimistic concurrency by
// the subject's last stream sequence, deduplication by message id.
type Log interface {
	// Append stores data on subject only if the subject's last stream
	// sequence is expectedLastSeq (0 = subject empty), with msgID as
	// Nats-Msg-Id (dedupe).
	//
	// A mismatch returns a *ConflictError (errors.Is ErrConflict) and stores
	// nothing. If msgID is already stored (within the dedupe window) as the
	// message right after expectedLastSeq, or the expectation holds and msgID
	// is already stored, the result is Duplicate with the original sequence
	// and nothing is added: retrying an append with the same arguments is
	// safe. An error wrapping ErrUnknownOutcome means the write may or may not
	// be stored: retry with the same msgID and expectedLastSeq.
	Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (AppendResult, error)

	// Load calls fn for each message of subject with seq > afterSeq, in order,
	// up to the subject's last sequence read from the stream leader at the
	// start; returns that last sequence (or afterSeq if nothing). An error
	// (from fn, returned as is, or from the log) stops the load; the sequence
	// returned with it is the last one fn handled without error.
	Load(ctx context.Context, subject string, afterSeq uint64, fn func(Record) error) (uint64, error)

	// LastSeq is the stream sequence of the subject's last message, 0 if the
	// subject is empty.
	LastSeq(ctx context.Context, subject string) (uint64, error)
}
