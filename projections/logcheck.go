package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The log is read whole by Rebuild: every sequence from 1 to the last one.
// checkLog refuses a stream that cannot give that before anything is read;
// consume (bounded) catches what changes while it reads; readFailed says
// why a bounded read got no message.

// gapDetailsMax is the most missing sequences whose list Rebuild asks the
// server for, to name them; beyond it only their number is given.
const gapDetailsMax = 4096

// infoTimeout bounds the stream info requests that explain a failed read.
const infoTimeout = 5 * time.Second

// streamState returns the stream's state (with the list of missing
// sequences if details); a missing stream wraps ErrStreamNotFound.
func streamState(ctx context.Context, js jetstream.JetStream, stream string, details bool) (*jetstream.StreamState, error) {
	s, err := js.Stream(ctx, stream)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = s.Info(ctx, jetstream.WithDeletedDetails(details)); err == nil {
			return &info.State, nil
		}
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, newLogError(ErrStreamNotFound, "stream %s not found", stream)
	}
	return nil, fmt.Errorf("projections: stream %s info: %w", stream, err)
}

// checkLog returns the stream's last sequence if the stream holds every
// sequence from 1 to it; otherwise an error wrapping ErrStreamNotFound,
// ErrLogTruncated or ErrLogGap that says what is missing.
func checkLog(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	st, err := streamState(ctx, js, stream, false)
	if err != nil {
		return 0, err
	}
	switch {
	case st.LastSeq == 0:
		return 0, nil // never written
	case st.FirstSeq > 1:
		return 0, newLogError(ErrLogTruncated, "stream %s is truncated: %s purged (%s)",
			stream, seqRange(1, st.FirstSeq-1), describeState(st))
	case st.NumDeleted > 0:
		if st.NumDeleted <= gapDetailsMax {
			if d, err := streamState(ctx, js, stream, true); err == nil {
				st = d
			}
		}
		return 0, newLogError(ErrLogGap, "stream %s has a gap: %s missing (%s)", stream, describeMissing(st), describeState(st))
	}
	return st.LastSeq, nil
}

// gapAt is the error of a bounded read that expected sequence expect and
// got got: expect..got-1 are not in the stream (purged while reading).
func gapAt(ctx context.Context, js jetstream.JetStream, stream string, expect, got uint64) error {
	state := fmt.Sprintf("next present %d", got)
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), infoTimeout)
	defer cancel()
	if st, err := streamState(ictx, js, stream, false); err == nil {
		state = describeState(st)
	}
	return newLogError(ErrLogGap, "stream %s has a gap: %s missing (%s)", stream, seqRange(expect, got-1), state)
}

// readFailed explains why a bounded read got no message while waiting for
// sequence expect: no message for idle (stalled), or the read failed with
// cause. The stream was deleted (ErrStreamNotFound), expect was purged
// meanwhile (ErrLogGap), or else the read stalled (ErrLogStalled) or
// failed.
func readFailed(ctx context.Context, js jetstream.JetStream, stream string, expect uint64, idle time.Duration, stalled bool, cause error) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), infoTimeout)
	defer cancel()
	st, err := streamState(ictx, js, stream, false)
	switch {
	case errors.Is(err, ErrStreamNotFound):
		return newLogError(ErrStreamNotFound, "stream %s was deleted while reading it (waiting for sequence %d)", stream, expect)
	case err != nil:
		if stalled {
			return newLogError(ErrLogStalled, "reading stream %s stalled: no message for %s while waiting for sequence %d (stream info: %v)",
				stream, idle, expect, err)
		}
		return fmt.Errorf("projections: read %s waiting for sequence %d: %w", stream, expect, cause)
	case expect < st.FirstSeq:
		return newLogError(ErrLogGap, "stream %s has a gap: %s purged while reading it (%s)",
			stream, seqRange(expect, st.FirstSeq-1), describeState(st))
	case expect <= st.LastSeq && msgMissing(ictx, js, stream, expect):
		return newLogError(ErrLogGap, "stream %s has a gap: sequence %d missing (%s)", stream, expect, describeState(st))
	case stalled:
		return newLogError(ErrLogStalled, "reading stream %s stalled: no message for %s while waiting for sequence %d (%s)",
			stream, idle, expect, describeState(st))
	}
	return fmt.Errorf("projections: read %s waiting for sequence %d: %w", stream, expect, cause)
}

// msgMissing reports whether the stream surely does not hold seq.
func msgMissing(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) bool {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false
	}
	_, err = s.GetMsg(ctx, seq)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// describeState is "first F, last L" (", no message left" when empty).
func describeState(st *jetstream.StreamState) string {
	s := fmt.Sprintf("first %d, last %d", st.FirstSeq, st.LastSeq)
	if st.Msgs == 0 {
		s += ", no message left"
	}
	return s
}

// seqRange is "sequence A" or "sequences A..B".
func seqRange(a, b uint64) string {
	if a == b {
		return fmt.Sprintf("sequence %d", a)
	}
	return fmt.Sprintf("sequences %d..%d", a, b)
}

// describeMissing names the missing sequences of st: all of them up to
// five, else their number and the first five; only their number without
// details.
func describeMissing(st *jetstream.StreamState) string {
	del := slices.Sorted(slices.Values(st.Deleted))
	switch {
	case len(del) == 0 && st.NumDeleted == 1:
		return "1 sequence"
	case len(del) == 0:
		return fmt.Sprintf("%d sequences", st.NumDeleted)
	case len(del) == 1:
		return fmt.Sprintf("sequence %d", del[0])
	}
	const named = 5
	list := make([]string, 0, named)
	for _, s := range del[:min(len(del), named)] {
		list = append(list, fmt.Sprint(s))
	}
	if len(del) <= named {
		return "sequences " + strings.Join(list, ", ")
	}
	return fmt.Sprintf("%d sequences (%s, ...)", len(del), strings.Join(list, ", "))
}
