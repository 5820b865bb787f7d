package actors

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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

// PastSession is a session rebuilt at a point of the log (SessionAt).
type PastSession struct {
	*segmented.State
	// chosen holds, for each memory item of the context's sections that
	// refers to an entry version, the stream sequence of the batch that
	// chose it (the first of the batches since that kept it): the
	// version existed then. Items are known by their key's digest (an
	// item written before, by its key, is the same item).
	chosen map[string]uint64 // refKey → sequence
	id     string
	// stored are the session's batches applied, in order: their stream
	// sequences and the times the stream stored them at.
	stored []storedAt
}

// storedAt is a batch's stream sequence and stored time.
type storedAt struct {
	seq uint64
	at  time.Time
}

// SessionAt rebuilds session id as it was at point p of log: it replays the
// stored batches into a fresh segmented.State, no snapshot, no tokenizer,
// no summarizer, so what it returns is what the log says. It is the one
// time travel of the project: `replay inspect --at-seq` and the inspector
// both call it, then ContextAt.
func SessionAt(ctx context.Context, log events.Log, codec *events.Codec, id string, p Point) (*PastSession, error) {
	st := segmented.New()
	out := &PastSession{State: st, chosen: map[string]uint64{}, id: id}
	sections := st.Assembled()
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
		out.stored = append(out.stored, storedAt{seq: r.Seq, at: r.Time})
		if a := st.Assembled(); a != sections { // each ContextAssembled sets new sections
			sections, out.chosen = a, chosenSince(out.chosen, a, r.Seq)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPastPoint) {
		return nil, err
	}
	if !st.Exists() {
		return nil, &NotYetError{SessionID: id, First: after}
	}
	return out, nil
}

// chosenSince is the chosen map of sections a, set by the batch at seq:
// an item the previous sections held keeps its sequence (a trimmed or
// re-planned context keeps what an earlier batch chose).
func chosenSince(prev map[string]uint64, a *memoryv1.Assembled, seq uint64) map[string]uint64 {
	next := make(map[string]uint64, len(a.GetMemory()))
	for _, m := range a.GetMemory() {
		k := refKey(m.GetScope(), segmented.ItemKeySum(m), m.GetVersion())
		if s, ok := prev[k]; ok {
			next[k] = s
		} else {
			next[k] = seq
		}
	}
	return next
}

// refKey names an entry version of scope by its key's digest sum.
func refKey(scope string, sum []byte, version uint64) string {
	return scope + "\x00" + versionKey(string(sum), version)
}

// ContextAt is p's context as the node sent it at p's point: the memory
// section's items are references to entry versions (the log keeps which
// version a context showed, not its text), filled in from what the
// scopes' logs hold now, and told apart by the removal ledger read
// through r (hydrateAt). An item whose entry was erased after the point
// stays, with its tokens, marked erased; one erased at or before it is
// left out, as the node left it out then; one the log no longer keeps
// (compacted out of the time-travel window) is marked so. A log or ledger
// that cannot be read or decoded is an error, never an item left out.
// Without r (nil) erasures are not told apart: an item whose version is
// gone is marked not kept. `replay inspect` and the inspector's time
// travel both call it, after SessionAt.
//
// With the log in partitions r is a LedgerStreams: the ledger of every
// stream is read, and a removal recorded in another stream than the
// session's is placed among the session's batches by the time the streams
// stored them (partitionLedger).
func ContextAt(ctx context.Context, log events.Log, r events.StreamReader, codec *events.Codec, p *PastSession) (*memoryv1.ContextReply, error) {
	if ls, ok := r.(LedgerStreams); ok {
		return hydrateWith(ctx, log, partitionLedger(ls, events.SessionSubject(p.id), p.stored), codec, p.chosen, p.LastSeq(), p.Context())
	}
	return hydrateAt(ctx, log, r, codec, p.chosen, p.LastSeq(), p.Context())
}

// hydrateAt fills the memory references of cx, the context at stream
// sequence point whose items were chosen at the sequences chosen names:
// the one place time travel reads what a past context referred to. Each
// scope named is read once, the ledger once from the earliest choice.
func hydrateAt(ctx context.Context, log events.Log, r events.StreamReader, codec *events.Codec, chosen map[string]uint64, point uint64, cx *memoryv1.ContextReply) (*memoryv1.ContextReply, error) {
	var led ledgerFunc
	if r != nil {
		led = func(ctx context.Context, from uint64) ([]*events.Removal, error) {
			l, err := events.ReadLedgerFrom(ctx, r, from, 0)
			if err != nil {
				return nil, err
			}
			return l.Removals, nil
		}
	}
	return hydrateWith(ctx, log, led, codec, chosen, point, cx)
}

// ledgerFunc reads the removals time travel tells erasures by, from
// sequence from of the session's stream on, in the order of that
// stream's sequences.
type ledgerFunc func(ctx context.Context, from uint64) ([]*events.Removal, error)

// hydrateWith is hydrateAt with the ledger read by led (nil: none).
func hydrateWith(ctx context.Context, log events.Log, led ledgerFunc, codec *events.Codec, chosen map[string]uint64, point uint64, cx *memoryv1.ContextReply) (*memoryv1.ContextReply, error) {
	scopes := map[string]*pastScope{}
	sessions := map[string]map[uint64]*memoryv1.Message{}
	summaries := map[string]*memoryv1.Summary{} // the session's archived summaries, by id
	from := point
	for _, m := range cx.GetMessages() {
		if rec := m.GetRecalled(); rec != nil {
			// An archived summary or a message of the session's own: of
			// the session's own log.
			sid := cx.GetSessionId()
			if rec.GetSummaryId() == "" && rec.GetSessionId() != "" {
				// A recalled message of another session: when it was chosen
				// is not kept, so the ledger is read from the start.
				from, sid = 0, rec.GetSessionId()
			}
			if _, ok := sessions[sid]; !ok {
				msgs, sums, err := readPastSession(ctx, log, codec, sid)
				if err != nil {
					return nil, err
				}
				sessions[sid] = msgs
				if sid == cx.GetSessionId() {
					summaries = sums
				}
			}
			continue
		}
		ref := m.GetMemory()
		if ref == nil {
			continue
		}
		if s, ok := chosen[refKey(ref.GetScope(), segmented.ItemKeySum(ref), ref.GetVersion())]; ok {
			from = min(from, s)
		}
		if scopes[ref.GetScope()] != nil {
			continue
		}
		ps, err := readPastScope(ctx, log, codec, ref.GetScope())
		if err != nil {
			return nil, err
		}
		scopes[ref.GetScope()] = ps
	}
	if len(scopes) == 0 && len(sessions) == 0 {
		return cx, nil
	}
	var removals []*events.Removal
	if led != nil {
		var err error
		if removals, err = led(ctx, from); err != nil {
			return nil, fmt.Errorf("actors: read the removal ledger for time travel: %w", err)
		}
	}
	for _, m := range cx.GetMessages() {
		if ref := m.GetMemory(); ref != nil {
			ps := scopes[ref.GetScope()]
			if err := ps.bad[versionKey(string(segmented.ItemKeySum(ref)), ref.GetVersion())]; err != nil {
				return nil, fmt.Errorf("actors: scope %s key %s version %d: %w", ref.GetScope(), ps.name(ref), ref.GetVersion(), err)
			}
		}
	}
	return segmented.HydrateAtWith(cx, func(ref *memoryv1.MemoryItem) (string, string, segmented.PastEntry) {
		scope, sum, version := ref.GetScope(), segmented.ItemKeySum(ref), ref.GetVersion()
		ps := scopes[scope]
		key := ps.keys[string(sum)] // "" when the log no longer holds the key
		if key == "" {
			key = ref.GetKey() // an item written before
		}
		since, ok := chosen[refKey(scope, sum, version)]
		if !ok {
			since = point
		}
		if at := erasedAt(removals, scope, sum, key, since); at > 0 {
			if at <= point {
				return key, "", segmented.PastLeftOut
			}
			return key, "", segmented.PastErased
		}
		if v, ok := ps.values[versionKey(string(sum), version)]; ok {
			return key, v, segmented.PastText
		}
		return key, "", segmented.PastNotKept
	}, func(session string, seq uint64) (*memoryv1.Message, segmented.PastEntry) {
		if m, ok := sessions[session][seq]; ok {
			return m, segmented.PastText
		}
		if session == cx.GetSessionId() {
			// The session's own message: its log no longer holds it
			// (the session itself is not erased: it is read).
			return nil, segmented.PastNotKept
		}
		for _, rm := range removals {
			if slices.Contains(rm.GetErased(), events.KindSession+"."+session) {
				if rm.Seq <= point {
					return nil, segmented.PastLeftOut
				}
				return nil, segmented.PastErased
			}
		}
		if led == nil {
			// Without the ledger an erase is not told apart: a message of
			// another session is gone only by an erase (sessions keep
			// their messages' events).
			return nil, segmented.PastErased
		}
		return nil, segmented.PastNotKept
	}, func(id string) (*memoryv1.Summary, bool) {
		sum, ok := summaries[id]
		return sum, ok
	}), nil
}

// readPastSession reads the messages a session's log holds now, by seq,
// and its archived summaries, by id.
func readPastSession(ctx context.Context, log events.Log, codec *events.Codec, id string) (map[uint64]*memoryv1.Message, map[string]*memoryv1.Summary, error) {
	msgs, sums := map[uint64]*memoryv1.Message{}, map[string]*memoryv1.Summary{}
	_, err := log.Load(ctx, events.SessionSubject(id), 0, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return fmt.Errorf("session %s seq %d: %w", id, r.Seq, err)
		}
		evs, err := codec.Unpack(b)
		if err != nil {
			return fmt.Errorf("session %s seq %d: %w", id, r.Seq, err)
		}
		for _, ev := range evs {
			switch a := ev.(type) {
			case *memoryv1.MessagesAppended:
				for _, m := range a.GetMessages() {
					msgs[m.GetSeq()] = m
				}
			case *memoryv1.L2Archived:
				for _, sum := range a.GetSummaries() {
					sums[sum.GetId()] = sum
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("actors: read session %s for time travel: %w", id, err)
	}
	return msgs, sums, nil
}

// erasedAt is the stream sequence of the first removal after since that
// erased the key of scope whose digest is sum (an entry erase of it, or
// an erase of the whole scope), 0 if none did. An entry erase is the
// removal of the plan item "entry:<kind>:<id>:#<sha256>"
// (LogRemoval.planned): its target, when it was asked alone, or its
// removal id (events.PlannedRemovalID) when it was part of a larger erase
// (a user's). key, when known, finds a plan written before, which spelled
// the key.
func erasedAt(removals []*events.Removal, scope string, sum []byte, key string, since uint64) uint64 {
	kind, id, err := sharedmem.ParseScopeName(scope)
	if err != nil {
		return 0
	}
	agg := AggregateKind(kind) + "." + id
	// A plan names an entry by the SHA-256 of its key (the ledger holds no
	// key; erasure.EntryItem, which imports this package); plans written
	// before spelled the key.
	items := []string{"entry:" + string(kind) + ":" + id + ":#" + hex.EncodeToString(sum)}
	if key != "" {
		items = append(items, "entry:"+string(kind)+":"+id+":"+key)
	}
	for _, rm := range removals {
		if rm.Seq <= since {
			continue
		}
		if slices.Contains(rm.GetErased(), agg) {
			return rm.Seq
		}
		if rm.GetReason() != memoryv1.RemovalReason_REMOVAL_REASON_ERASE || !slices.Contains(rm.GetRewritten(), agg) {
			continue
		}
		for _, item := range items {
			if rm.GetTarget() == item || events.IsPlannedRemoval(rm.GetId(), item) {
				return rm.Seq
			}
		}
	}
	return 0
}

// pastScope is what a scope's log holds now of its entry versions: each
// as an EntryChanged, or inside a ScopeBaseline (an entry erase or a
// compaction rewrote the scope: the baseline restates its state and the
// messages before it are removed). A version erased since is not in it,
// and a key erased and written again starts its versions anew: the
// removal ledger tells those apart (erasedAt). A version older than the
// time-travel window is not in it either.
type pastScope struct {
	values map[string]string // sum\x00version → value (sum: the key's SHA-256)
	bad    map[string]error  // sum\x00version → why its value does not decode
	keys   map[string]string // sum → key: a memory item names its key by digest
	sums   map[string]string // key → sum, so each key is hashed once
}

// name is how an error names the key of memory item ref: the key, or a
// prefix of its digest when the log no longer holds it.
func (ps *pastScope) name(ref *memoryv1.MemoryItem) string {
	return segmented.KeyName(ref, ps.keys[string(segmented.ItemKeySum(ref))])
}

// readPastScope reads scope's log (scope: "<kind>:<id>" or "global").
func readPastScope(ctx context.Context, log events.Log, codec *events.Codec, scope string) (*pastScope, error) {
	subj, ok := scopeSubject(scope)
	if !ok {
		return nil, fmt.Errorf("actors: a memory item names %q, which is not a scope", scope)
	}
	ps := &pastScope{values: map[string]string{}, bad: map[string]error{}, keys: map[string]string{}, sums: map[string]string{}}
	_, err := log.Load(ctx, subj, 0, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return fmt.Errorf("scope %s seq %d: %w", scope, r.Seq, err)
		}
		evs, err := codec.Unpack(b)
		if err != nil {
			return fmt.Errorf("scope %s seq %d: %w", scope, r.Seq, err)
		}
		for _, ev := range evs {
			switch e := ev.(type) {
			case *memoryv1.EntryChanged:
				ps.add(e.GetEntry())
			case *memoryv1.ScopeBaseline:
				for _, kh := range e.GetState().GetKeys() {
					for _, v := range kh.GetVersions() {
						ps.add(v)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("actors: read scope %s for time travel: %w", scope, err)
	}
	return ps, nil
}

// add notes an entry version's value (a tombstone has none; a value that
// is not text was never a memory item). A later record of the same
// version (a key erased and written again) replaces an earlier one.
func (ps *pastScope) add(e *memoryv1.Entry) {
	sum, ok := ps.sums[e.GetKey()]
	if !ok {
		sum = string(segmented.KeySum(e.GetKey()))
		ps.sums[e.GetKey()], ps.keys[sum] = sum, e.GetKey()
	}
	if e.GetDeleted() {
		return
	}
	k := versionKey(sum, e.GetVersion())
	v, err := sharedmem.DecodeValue(e)
	switch {
	case err != nil:
		ps.bad[k] = err
	case utf8.Valid(v):
		ps.values[k] = string(v)
		delete(ps.bad, k)
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
