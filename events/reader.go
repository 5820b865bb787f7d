package events

import (
	"context"
	"errors"
	"strings"
)

// Bounds are the limits of the stream as read at one moment.
type Bounds struct {
	// First is the first sequence the stream holds; Last+1 when it holds no
	// message. It moves forward when messages are purged (or compacted) away.
	First uint64
	// Last is the last sequence ever assigned (0: never written). It never
	// moves back, even when the last message is removed.
	Last uint64
	// Msgs is the number of messages the stream holds.
	Msgs uint64
}

// Missing is the number of sequences between First and Last that the stream
// does not hold (deleted single messages, subjects purged in the middle).
func (b Bounds) Missing() uint64 {
	if b.Last < b.First {
		return 0
	}
	return b.Last - b.First + 1 - b.Msgs
}

// StreamReader reads the whole log: every aggregate, in stream order. It is
// the one way the readers of the whole stream (projector, rebuild, replay)
// see it, so a moved first sequence or a gap is handled in one place.
type StreamReader interface {
	// Bounds returns the stream's first and last sequence and its message
	// count, as the stream leader reports them. A
	// stream that does not exist is an error wrapping ErrNoStream.
	Bounds(ctx context.Context) (Bounds, error)

	// Read returns a cursor over the records with Seq >= from (from 0 is 1),
	// in increasing sequence order. Sequences the stream does not hold —
	// below a moved first sequence, or deleted — are skipped: two records in
	// a row need not have consecutive sequences, and it is the caller's
	// business whether a skipped sequence is allowed (the removal ledger
	// lists those removed on purpose: ReadLedger). ctx
	// bounds the whole read: once it ends, Next fails. Close the cursor when
	// done. A stream that does not exist is an error wrapping ErrNoStream.
	Read(ctx context.Context, from uint64, opts ...ReadOption) (Cursor, error)
}

// Cursor is an open read of the stream (StreamReader.Read).
type Cursor interface {
	// Next returns the next record, waiting for it to be appended until ctx
	// ends (then it returns an error wrapping ctx.Err()). A bounded read
	// (WithStop) returns ErrEndOfRead once it has returned the record at the
	// stop sequence, or when the stream holds nothing more up to it (see
	// WithStop).
	// The record's Data may be kept: it is not reused.
	Next(ctx context.Context) (Record, error)
	// Close ends the read; a Next waiting in another goroutine returns an
	// error. It is idempotent and safe from any goroutine.
	Close()
}

// ErrEndOfRead is returned by Cursor.Next of a bounded read (WithStop) when
// no record up to the stop sequence is left.
var ErrEndOfRead = errors.New("events: end of the bounded read")

// ReadOption adjusts one StreamReader.Read.
type ReadOption func(*readOptions)

type readOptions struct {
	stop      uint64 // 0: follow the stream forever
	maxResets int    // JetStream: ordered consumer re-creations (0: the client's default)
	readAhead int    // JetStream: messages buffered ahead of Next (0: 256)
	subjects  string // "": every subject of the log (mem.ev.>)
}

func applyReadOptions(opts []ReadOption) readOptions {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithStop bounds the read at sequence stop: Next returns ErrEndOfRead after
// the record at stop, or at once when the stream holds nothing more up to
// stop. It never waits for a sequence the stream no longer holds; it does
// wait for sequences not written yet (stop beyond Bounds.Last when the read
// began), as an unbounded read does.
func WithStop(stop uint64) ReadOption { return func(o *readOptions) { o.stop = stop } }

// WithSubjects reads only the records whose subject matches filter: a
// subject, or a prefix ending in ".>" (e.g. RemovalSubjects). A bounded
// read still ends at its stop, however few records match.
func WithSubjects(filter string) ReadOption { return func(o *readOptions) { o.subjects = filter } }

// subjectMatches reports whether subject matches a WithSubjects filter.
func subjectMatches(filter, subject string) bool {
	if filter == "" {
		return true
	}
	if p, ok := strings.CutSuffix(filter, ">"); ok {
		return strings.HasPrefix(subject, p)
	}
	return subject == filter
}

// WithMaxResets bounds how often the JetStream log's ordered consumer
// re-creates its server-side consumer (after missed heartbeats, a lost
// leader) before Next fails; n <= 0 keeps the client's default (retry
// forever). The in-memory log ignores it.
func WithMaxResets(n int) ReadOption { return func(o *readOptions) { o.maxResets = n } }

// WithReadAhead sets how many messages the JetStream log buffers ahead of
// Next (default 256). The in-memory log ignores it.
func WithReadAhead(n int) ReadOption { return func(o *readOptions) { o.readAhead = n } }

// GapLister is implemented by logs that can name their missing sequences
// (for error messages: "sequences 2, 5, 8 missing").
type GapLister interface {
	// MissingSeqs returns the sequences between First and Last the stream
	// does not hold, in order, if there are at most limit of them; with more
	// it returns nil, false.
	MissingSeqs(ctx context.Context, limit int) ([]uint64, bool, error)
}
