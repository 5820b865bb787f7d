package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Point is a point of the log to rebuild a session at (SessionAt). The zero
// Point is the latest.
type Point struct {
	// Seq, when > 0, applies only the session's batches with stream
	// sequence <= Seq.
	Seq uint64
	// Time, when set, applies only the batches whose command time
	// (EventBatch.time_unix_nano, else the stored time) is <= Time.
	Time time.Time
}

// ErrNotYet is returned (wrapped in a *NotYetError) by SessionAt when the
// session has no batch at or before the point.
var ErrNotYet = errors.New("actors: session has no batch at this point")

// NotYetError says why SessionAt found no session: First is the sequence of
// its first batch after the point (0: the log holds no batch of it at all).
type NotYetError struct {
	SessionID string
	First     uint64
}

func (e *NotYetError) Error() string {
	if e.First == 0 {
		return fmt.Sprintf("session %s has no batch in the log", e.SessionID)
	}
	return fmt.Sprintf("session %s did not exist yet (its first batch is seq %d)", e.SessionID, e.First)
}

func (e *NotYetError) Unwrap() error { return ErrNotYet }

// errPastPoint ends the load at the first batch beyond the point.
var errPastPoint = errors.New("past the point")

// SessionAt rebuilds session id as it was at point p of log: it replays the
// stored batches into a fresh segmented.State, no snapshot, no tokenizer,
// no summarizer, so what it returns is what the log says. It is the one
// time travel of the project: `replay inspect --at-seq` and the inspector
// both call it.
func SessionAt(ctx context.Context, log events.Log, codec *events.Codec, id string, p Point) (*segmented.State, error) {
	st := segmented.New()
	var after uint64 // the first batch beyond the point, if any
	_, err := log.Load(ctx, events.SessionSubject(id), 0, func(r events.Record) error {
		if p.Seq > 0 && r.Seq > p.Seq {
			after = r.Seq
			return errPastPoint
		}
		if !p.Time.IsZero() {
			b, err := events.DecodeBatch(r.Data)
			if err != nil {
				return fmt.Errorf("session %s seq %d: %w", id, r.Seq, err)
			}
			t := r.Time
			if b.GetTimeUnixNano() != 0 {
				t = time.Unix(0, b.GetTimeUnixNano())
			}
			if t.After(p.Time) {
				after = r.Seq
				return errPastPoint
			}
		}
		if err := Replay(codec, st, []events.Record{r}); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPastPoint) {
		return nil, err
	}
	if !st.Exists() {
		return nil, &NotYetError{SessionID: id, First: after}
	}
	return st, nil
}

// ContextAt is st's context with its memory section's texts read from the
// scopes' events in log (the log keeps references to entry versions,
// DESIGN §12): what the node sent then, or, for an entry erased since,
// nothing (segmented.HydrateMemory). `replay inspect` and the inspector's
// time travel both call it, after SessionAt.
func ContextAt(ctx context.Context, log events.Log, codec *events.Codec, st *segmented.State) *memoryv1.ContextReply {
	values := map[string]map[string]string{} // subject → key\x00version → value
	get := func(scope, key string, version uint64) (string, bool) {
		subj, ok := scopeSubject(scope)
		if !ok {
			return "", false
		}
		vals, seen := values[subj]
		if !seen {
			vals = map[string]string{}
			values[subj] = vals
			_, _ = log.Load(ctx, subj, 0, func(r events.Record) error {
				b, err := events.DecodeBatch(r.Data)
				if err != nil {
					return nil
				}
				evs, err := codec.Unpack(b)
				if err != nil {
					return nil
				}
				for _, ev := range evs {
					c, ok := ev.(*memoryv1.EntryChanged)
					if !ok || c.GetEntry().GetDeleted() {
						continue
					}
					if v, err := sharedmem.DecodeValue(c.GetEntry()); err == nil && utf8.Valid(v) {
						vals[versionKey(c.GetEntry().GetKey(), c.GetEntry().GetVersion())] = string(v)
					}
				}
				return nil
			})
		}
		v, ok := vals[versionKey(key, version)]
		return v, ok
	}
	return segmented.Hydrate(st.Context(), segmented.Sources{Entry: get, Message: messagesFromLog(ctx, log, codec), Erased: ErasedText})
}

// ErasedText stands, in a context rebuilt from the log, for a recalled
// message of another session that was erased since: the LLM was sent
// something there, and it is gone.
const ErasedText = "[erased]"

// messagesFromLog returns a segmented.MessageAt reading the messages of
// other sessions from their events in log (each session loaded once).
func messagesFromLog(ctx context.Context, log events.Log, codec *events.Codec) segmented.MessageAt {
	sessions := map[string]map[uint64]*memoryv1.Message{}
	return func(session string, seq uint64) (*memoryv1.Message, bool) {
		msgs, seen := sessions[session]
		if !seen {
			msgs = map[uint64]*memoryv1.Message{}
			sessions[session] = msgs
			_, _ = log.Load(ctx, events.SessionSubject(session), 0, func(r events.Record) error {
				b, err := events.DecodeBatch(r.Data)
				if err != nil {
					return nil
				}
				evs, err := codec.Unpack(b)
				if err != nil {
					return nil
				}
				for _, ev := range evs {
					if a, ok := ev.(*memoryv1.MessagesAppended); ok {
						for _, m := range a.GetMessages() {
							msgs[m.GetSeq()] = m
						}
					}
				}
				return nil
			})
		}
		m, ok := msgs[seq]
		return m, ok
	}
}

func versionKey(key string, version uint64) string {
	return key + "\x00" + strconv.FormatUint(version, 10)
}

// scopeSubject is the log subject of a memory item's scope ("<kind>:<id>"
// or "global").
func scopeSubject(scope string) (string, bool) {
	kind, id, err := sharedmem.ParseScopeName(scope)
	if err != nil {
		return "", false
	}
	return events.ScopeSubject(AggregateKind(kind), id), true
}
