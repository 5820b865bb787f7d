package inspector

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/events"
)

// outsideWindow is a point of time travel before the first message the
// log keeps: the events before it were compacted or erased away, so no
// state there can be rebuilt exactly. Its text is the one `replay inspect
// --at-seq` exits with (replay.ErrOutsideWindow), without the command's
// prefix.
type outsideWindow struct {
	Seq, First uint64
	Stream     string
}

func (o *outsideWindow) Error() string {
	return fmt.Sprintf("point outside the time-travel window: seq %d is before the first sequence stream %s keeps (%d): the events before it were compacted or erased away; the earliest point to inspect is --at-seq %d",
		o.Seq, o.Stream, o.First, o.First)
}

// SubjectReader is a Deps.Reader of a log in partitions: there is no
// whole stream, but each aggregate's (ReaderOf names it by its logical
// subject).
type SubjectReader interface {
	ReaderOf(subject string) (events.StreamReader, error)
}

// sessionReader is the reader of the stream holding session id:
// Deps.Reader, or its stream when it is a SubjectReader.
func (in *Inspector) sessionReader(id string) (events.StreamReader, error) {
	if sr, ok := in.deps.Reader.(SubjectReader); ok {
		return sr.ReaderOf(events.SessionSubject(id))
	}
	return in.deps.Reader, nil
}

// checkWindow returns an *outsideWindow for seq before the log's first
// kept sequence (nil: inside, or the head was never removed), as `replay
// inspect` checks it.
func (in *Inspector) checkWindow(ctx context.Context, id string, seq uint64) error {
	if seq == 0 || in.deps.Reader == nil {
		return nil
	}
	r, err := in.sessionReader(id)
	if err != nil {
		return err
	}
	b, err := r.Bounds(ctx)
	if err != nil {
		return fmt.Errorf("inspector: the log's bounds: %w", err)
	}
	if b.First > 1 && seq < b.First {
		return &outsideWindow{Seq: seq, First: b.First, Stream: in.deps.Stream}
	}
	return nil
}
