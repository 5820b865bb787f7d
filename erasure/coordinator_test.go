package erasure

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// fakeActors answers removal commands as the actors do, without a log of
// their own: each EraseAggregate (and CompactAggregate) is recorded, and
// the first of a removal id counts its messages, the next ones (a retry, a
// resumption) answer 0 messages.
type fakeActors struct {
	mu    sync.Mutex
	calls []string         // "<item> <removal id>", in order
	keys  []string         // the keys of entry erases sent by key (not digest)
	done  map[string]bool  // removal ids carried out
	gone  map[string]error // item -> the error its actor answers
}

func newFakeActors() *fakeActors {
	return &fakeActors{done: map[string]bool{}, gone: map[string]error{}}
}

func (f *fakeActors) answer(it Item, body any, reply actors.ReplyFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var id string
	switch b := body.(type) {
	case *memoryv1.EraseAggregate:
		id = b.GetRemovalId()
		switch {
		case b.GetKey() != "":
			it = EntryItem(it.Scope, it.ID, b.GetKey())
			f.keys = append(f.keys, b.GetKey())
		case len(b.GetKeySha256()) > 0:
			it = Item{Kind: ItemEntry, Scope: it.Scope, ID: it.ID, KeySum: hex.EncodeToString(b.GetKeySha256())}
		}
	case *memoryv1.CompactAggregate:
		id = "compact:" + b.GetRemovalId()
	default:
		return fmt.Errorf("unexpected %T", body)
	}
	f.calls = append(f.calls, it.String()+" "+id)
	if err := f.gone[it.String()]; err != nil {
		go reply(nil, err)
		return nil
	}
	n := uint64(3)
	if f.done[id] {
		n = 0
	}
	f.done[id] = true
	go reply(&memoryv1.EraseReceipt{RemovalId: id, Messages: n}, nil)
	return nil
}

func (f *fakeActors) Dispatch(id string, _ *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	return f.answer(SessionItem(id), body, reply)
}

func (f *fakeActors) DispatchScope(kind sharedmem.Kind, id string, _ *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	return f.answer(ScopeItem(kind, id), body, reply)
}

func (f *fakeActors) items() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// fakeData is a large-data store that records its erasures.
type fakeData struct {
	mu  sync.Mutex
	ids []string
}

func (d *fakeData) Erase(_ context.Context, id string, base *memoryv1.LogRemoval) (uint64, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, id+" "+base.GetId())
	return 0, 1, nil
}

// fakeReadModel lists sessions of users, data of sessions and entries by
// metadata, and has applied everything.
type fakeReadModel struct {
	sessions map[string][]string
	data     map[string][]string
	meta     map[Source][]EntryRef
}

func (m fakeReadModel) WaitFor(context.Context, uint64) error { return nil }

func (m fakeReadModel) ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error) {
	var out []*memoryv1.SessionIndexEntry
	for _, id := range m.sessions[req.GetUserId()] {
		out = append(out, &memoryv1.SessionIndexEntry{SessionId: id, UserId: req.GetUserId()})
	}
	return out, "", nil
}

func (m fakeReadModel) DataOwnedBy(owner string) ([]string, error) { return m.data[owner], nil }

func (m fakeReadModel) EntriesWithMetadata(name, value string) ([]EntryRef, error) {
	return m.meta[Source{name, value}], nil
}

type fixture struct {
	log    *events.MemLog
	actors *fakeActors
	data   *fakeData
	rm     fakeReadModel
	clock  time.Time
}

func newFixture() *fixture {
	return &fixture{log: events.NewMemLog(), actors: newFakeActors(), data: &fakeData{},
		clock: time.Unix(1_700_000_000, 0),
		rm: fakeReadModel{
			sessions: map[string][]string{"u1": {"s1", "s2"}},
			data:     map[string][]string{"session:s1": {"d1"}},
			meta: map[Source][]EntryRef{
				{SourceSessionKey, "s1"}:       {{sharedmem.KindAgent, "a1", "episode/one"}},
				{LegacySourceSessionKey, "s2"}: {{sharedmem.KindAgent, "a1", "episode/two"}},
				{SourceUserKey, "u1"}:          {{sharedmem.KindProject, "p1", "plan"}, {sharedmem.KindUser, "u1", "fact"}},
			}}}
}

func (f *fixture) coordinator(t *testing.T, step func(Step) error) *Coordinator {
	t.Helper()
	c, err := New(Config{Now: func() time.Time { return f.clock }, Step: step},
		Deps{Log: f.log, Reader: f.log, Codec: events.NewCodec(), Actors: f.actors, Data: f.data, ReadModel: f.rm})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ledger reads the whole removal ledger.
func (f *fixture) ledger(t *testing.T) *events.Ledger {
	t.Helper()
	led, err := events.ReadLedger(context.Background(), f.log, 0)
	if err != nil {
		t.Fatal(err)
	}
	return led
}

var userPlan = []string{"session.s1", "session_scope.s1", "data.d1", ent(sharedmem.KindAgent, "a1", "episode/one"),
	"session.s2", "session_scope.s2", ent(sharedmem.KindAgent, "a1", "episode/two"), "user.u1", ent(sharedmem.KindProject, "p1", "plan")}

// TestEraseUser: the plan is recorded with the request's who and why and
// the clock's time, every item goes to its actor (or the store) under its
// own removal id, then the completion; the receipt says what went.
func TestEraseUser(t *testing.T) {
	f := newFixture()
	c := f.coordinator(t, nil)
	rc, err := c.Erase(context.Background(), Request{Target: UserTarget("u1"), CommandID: "c1", By: "alice", Why: "gdpr"})
	if err != nil {
		t.Fatal(err)
	}
	led := f.ledger(t)
	if len(led.Removals) != 1 || len(led.Pending()) != 0 {
		t.Fatalf("ledger: %d removals, %d pending; want one completed plan", len(led.Removals), len(led.Pending()))
	}
	p := led.Removals[0]
	if p.GetId() != RequestID(UserTarget("u1"), "alice", "c1") || p.GetTarget() != "user:u1" || p.GetRequestedBy() != "alice" ||
		p.GetWhy() != "gdpr" || p.GetAtUnixNano() != f.clock.UnixNano() || p.GetReason() != memoryv1.RemovalReason_REMOVAL_REASON_ERASE {
		t.Errorf("plan record %v", p.LogRemoval)
	}
	if !slices.Equal(p.GetPlanned(), userPlan) {
		t.Errorf("planned %q\nwant %q", p.GetPlanned(), userPlan)
	}
	var want []string
	for _, s := range userPlan {
		it, _ := ParseItem(s)
		if it.Kind != ItemData {
			want = append(want, s+" "+ItemRemovalID(p.GetId(), it))
		}
	}
	if got := f.actors.items(); !slices.Equal(got, want) {
		t.Errorf("actors asked %q\nwant %q", got, want)
	}
	if len(f.actors.keys) > 0 {
		t.Errorf("entries sent by key %q, want by digest", f.actors.keys)
	}
	if len(f.data.ids) != 1 || f.data.ids[0] != "d1 "+ItemRemovalID(p.GetId(), DataItem("d1")) {
		t.Errorf("data erased %q", f.data.ids)
	}
	if rc.GetRemovalId() != p.GetId() || rc.GetTarget() != "user:u1" || rc.GetMessages() != 8*3+1 ||
		!slices.Equal(rc.GetSessions(), []string{"s1", "s2"}) || !slices.Equal(rc.GetScopes(), []string{"user:u1"}) ||
		!slices.Equal(rc.GetData(), []string{"d1"}) || !slices.Equal(rc.GetEntries(), []string{"agent:a1:episode/one", "agent:a1:episode/two", "project:p1:plan"}) ||
		rc.GetRemovalSeq() != led.Last || rc.GetPhysical() == "" {
		t.Errorf("receipt %v (ledger ends at %d)", rc, led.Last)
	}

	// The same request again: the recorded plan stands (the read model
	// now lists more), each item is asked again and removes nothing, no
	// second plan or completion.
	f.rm.sessions["u1"] = append(f.rm.sessions["u1"], "s3")
	rc, err = c.Erase(context.Background(), Request{Target: UserTarget("u1"), CommandID: "c1", By: "alice", Why: "gdpr"})
	if err != nil {
		t.Fatal(err)
	}
	if again := f.ledger(t); len(again.Removals) != 1 || again.Last != led.Last {
		t.Errorf("a retry wrote to the ledger: %d removals, last %d (was %d)", len(again.Removals), again.Last, led.Last)
	}
	if rc.GetMessages() != 1 || slices.Contains(rc.GetSessions(), "s3") {
		t.Errorf("retry receipt %v: want nothing removed by the actors, s3 not in it", rc)
	}
}

// TestEraseRetention: a retention erase plans the session's own data
// only, under the id it is given, with reason RETENTION throughout.
func TestEraseRetention(t *testing.T) {
	f := newFixture()
	c := f.coordinator(t, nil)
	id := RetentionID("s1")
	if _, err := c.Erase(context.Background(), Request{Target: SessionTarget("s1"), ID: id,
		Reason: memoryv1.RemovalReason_REMOVAL_REASON_RETENTION, By: "node", Why: "delete-after"}); err != nil {
		t.Fatal(err)
	}
	led := f.ledger(t)
	if len(led.Removals) != 1 || led.Removals[0].GetId() != id ||
		!slices.Equal(led.Removals[0].GetPlanned(), []string{"session.s1", "session_scope.s1", "data.d1"}) ||
		led.Removals[0].GetReason() != memoryv1.RemovalReason_REMOVAL_REASON_RETENTION {
		t.Fatalf("ledger %v", led.Removals)
	}
}

// TestEraseSkipsAnEntryGone: an entry its scope no longer holds (erased
// since the plan was made) is skipped in a plan of several items; an
// entry erase of a key not there answers its 404, its plan completed (a
// plan left pending would be resumed, and fail, for ever).
func TestEraseSkipsAnEntryGone(t *testing.T) {
	f := newFixture()
	notFound := &statusErr{404}
	f.actors.gone[ent(sharedmem.KindAgent, "a1", "episode/one")] = notFound
	c := f.coordinator(t, nil)
	if _, err := c.Erase(context.Background(), Request{Target: SessionTarget("s1")}); err != nil {
		t.Fatalf("erase s1 with its episode gone: %v", err)
	}
	_, err := c.Erase(context.Background(), Request{Target: EntryTarget(sharedmem.KindAgent, "a1", "episode/one")})
	if !errors.Is(err, notFound) {
		t.Fatalf("entry erase of a key gone: %v, want its 404", err)
	}
	if led := f.ledger(t); len(led.Removals) != 2 || len(led.Pending()) != 0 {
		t.Errorf("%d removals, %d pending; want both plans completed", len(led.Removals), len(led.Pending()))
	}
}

type statusErr struct{ code int }

func (e *statusErr) Error() string                 { return fmt.Sprint(e.code) }
func (e *statusErr) Status() (int, string, string) { return e.code, "", "" }

// TestEraseWithoutReadModel: a session's plan holds its own aggregates;
// a user erase is refused.
func TestEraseWithoutReadModel(t *testing.T) {
	f := newFixture()
	c, err := New(Config{}, Deps{Log: f.log, Reader: f.log, Codec: events.NewCodec(), Actors: f.actors})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Erase(context.Background(), Request{Target: UserTarget("u1")}); !errors.Is(err, ErrNoReadModel) {
		t.Fatalf("user erase without a read model: %v", err)
	}
	rc, err := c.Erase(context.Background(), Request{Target: SessionTarget("s1")})
	if err != nil || !slices.Equal(rc.GetSessions(), []string{"s1"}) {
		t.Fatalf("session erase without a read model: %v %v", rc, err)
	}
	if p := f.ledger(t).Removals[0]; !slices.Equal(p.GetPlanned(), []string{"session.s1", "session_scope.s1"}) || len(p.GetId()) != 33 {
		t.Errorf("plan %v", p.LogRemoval)
	}
}

var errCrash = errors.New("crash")

// TestEraseStoppedAtEachStepIsResumed: an erase stopped at step k (the
// plan recorded, k items removed, or the completion recorded) is finished
// by Resume: the plan completed, every item removed, one plan in the
// ledger; a second Resume finds nothing to do. This is the crash at step
// k of the node's fault tests, in one process.
func TestEraseStoppedAtEachStepIsResumed(t *testing.T) {
	ctx := context.Background()
	for k := 0; k <= len(userPlan)+1; k++ {
		t.Run(fmt.Sprint("step", k), func(t *testing.T) {
			f := newFixture()
			n := 0
			c := f.coordinator(t, func(s Step) error {
				if n++; n > k {
					return errCrash
				}
				return nil
			})
			rc, err := c.Erase(ctx, Request{Target: UserTarget("u1"), CommandID: "c1", By: "alice"})
			if !errors.Is(err, errCrash) || rc != nil {
				t.Fatalf("erase stopped at step %d: %v %v", k, rc, err)
			}
			led := f.ledger(t)
			if len(led.Removals) != 1 {
				t.Fatalf("%d removals recorded", len(led.Removals))
			}
			if wantPending := k <= len(userPlan); (len(led.Pending()) == 1) != wantPending {
				t.Fatalf("stopped at step %d: pending %d", k, len(led.Pending()))
			}
			before := len(f.actors.items())
			r := f.coordinator(t, nil) // the node again, without the stop
			res, err := r.Resume(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			led = f.ledger(t)
			if len(led.Removals) != 1 || len(led.Pending()) != 0 || res.Next < 2 || res.Next > led.Last+1 {
				t.Fatalf("after Resume: %d removals, %d pending, next %d (last %d)", len(led.Removals), len(led.Pending()), res.Next, led.Last)
			}
			if k <= len(userPlan) && (res.Removals != 1 || len(f.actors.items()) == before) {
				t.Fatalf("Resume finished %d removals, asked %d actors", res.Removals, len(f.actors.items())-before)
			}
			if k > len(userPlan) && res.Removals != 0 {
				t.Fatalf("Resume of a completed plan: %d removals", res.Removals)
			}
			for _, s := range userPlan {
				it, _ := ParseItem(s)
				if it.Kind == ItemData {
					continue
				}
				if !f.actors.done[ItemRemovalID(led.Removals[0].GetId(), it)] {
					t.Errorf("%s not removed after Resume", s)
				}
			}
			if res, err := r.Resume(ctx, res.Next); err != nil || res.Removals != 0 {
				t.Errorf("second Resume: %+v %v", res, err)
			}
			// The request retried answers from the plan recorded.
			if rc, err := r.Erase(ctx, Request{Target: UserTarget("u1"), CommandID: "c1", By: "alice"}); err != nil || rc.GetRemovalId() != led.Removals[0].GetId() {
				t.Errorf("retry after Resume: %v %v", rc, err)
			}
			if n := len(f.ledger(t).Removals); n != 1 {
				t.Errorf("%d removals after the retry", n)
			}
		})
	}
}

// TestResumeLoneRemovals: a removal of its own left pending (a
// compaction, an aggregate's erase whose plan is complete, a large-data
// erase) goes again to its actor or store under its own id.
func TestResumeLoneRemovals(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	codec := events.NewCodec()
	for _, rm := range []*memoryv1.LogRemoval{
		{Id: "k1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_COMPACT, Target: "scope:agent:a1", Rewritten: []string{"agent.a1"}},
		{Id: "r1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1", Erased: []string{"session.s1"}},
		{Id: "r2", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1", Erased: []string{"data.d7"}},
	} {
		if _, err := events.AppendRemoval(ctx, f.log, codec, rm, f.clock); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.coordinator(t, nil).Resume(ctx, 0)
	if err != nil || res.Removals != 3 {
		t.Fatalf("Resume: %+v %v", res, err)
	}
	if got := f.actors.items(); !slices.Equal(got, []string{"agent.a1 compact:k1", "session.s1 r1"}) {
		t.Errorf("actors asked %q", got)
	}
	if !slices.Equal(f.data.ids, []string{"d7 r2"}) {
		t.Errorf("data erased %q", f.data.ids)
	}
}

// TestCompact sends the compaction to the scope's actor.
func TestCompact(t *testing.T) {
	f := newFixture()
	rc, err := f.coordinator(t, nil).Compact(context.Background(), sharedmem.KindSession, "s1", CompactionID("mem.ev.session_scope.s1", 4), f.clock)
	if err != nil || rc.GetMessages() != 3 {
		t.Fatalf("Compact: %v %v", rc, err)
	}
	if got := f.actors.items(); len(got) != 1 || got[0] != "session_scope.s1 compact:"+CompactionID("mem.ev.session_scope.s1", 4) {
		t.Errorf("actors asked %q", got)
	}
}

// TestEraseNoAnswer: an actor that never answers ends the erase when its
// context ends, with actors.ErrNoAnswer; the plan stays pending.
func TestEraseNoAnswer(t *testing.T) {
	f := newFixture()
	c, err := New(Config{}, Deps{Log: f.log, Reader: f.log, Codec: events.NewCodec(), Actors: silent{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Erase(ctx, Request{Target: ScopeTarget(sharedmem.KindAgent, "a1")}); !errors.Is(err, actors.ErrNoAnswer) {
		t.Fatalf("erase with a silent actor: %v", err)
	}
	if n := len(f.ledger(t).Pending()); n != 1 {
		t.Errorf("%d pending, want the plan", n)
	}
}

type silent struct{}

func (silent) Dispatch(string, *tenancy.Caller, any, actors.ReplyFunc) error { return nil }
func (silent) DispatchScope(sharedmem.Kind, string, *tenancy.Caller, any, actors.ReplyFunc) error {
	return nil
}

var _ proto.Message = (*memoryv1.EraseReceipt)(nil)

// TestResumePlanWrittenBefore: a plan whose entry item spells the key (as
// plans were written before entries were spelled by digest) is resumed
// with the key, under the removal id derived from that spelling: the one
// its item's removal was recorded under.
func TestResumePlanWrittenBefore(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	old := "entry:agent:a1:episode/one"
	if _, err := events.AppendRemoval(ctx, f.log, events.NewCodec(), &memoryv1.LogRemoval{Id: "old1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
		Target: "entry:agent:a1:episode/one", Planned: []string{old}}, f.clock); err != nil {
		t.Fatal(err)
	}
	if res, err := f.coordinator(t, nil).Resume(ctx, 0); err != nil || res.Removals != 1 {
		t.Fatalf("Resume: %+v %v", res, err)
	}
	want := ent(sharedmem.KindAgent, "a1", "episode/one") + " " + events.PlannedRemovalID("old1", old)
	if got := f.actors.items(); !slices.Equal(got, []string{want}) || !slices.Equal(f.actors.keys, []string{"episode/one"}) {
		t.Errorf("actors asked %q (by key: %q), want %q by key", got, f.actors.keys, want)
	}
}
