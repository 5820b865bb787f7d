package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/largedata"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// corpusParts is C in these tests.
const corpusParts = 3

// corpusLogWriter appends batches to a real log stream, numbering the
// aggregates' versions as the actors do.
type corpusLogWriter struct {
	t       *testing.T
	log     *events.JetStreamLog
	codec   *events.Codec
	version map[string]uint64
	lastSeq map[string]uint64
	msgSeq  map[string]uint64
	last    uint64
}

func (w *corpusLogWriter) append(kind, id string, evs ...proto.Message) uint64 {
	w.t.Helper()
	anys, err := w.codec.Pack(evs)
	if err != nil {
		w.t.Fatal(err)
	}
	subj := events.ScopeSubject(kind, id)
	w.version[subj]++
	b := &memoryv1.EventBatch{
		CommandId: fmt.Sprintf("%s-%s-c%d", kind, id, w.version[subj]), AggregateKind: kind, AggregateId: id,
		Version: w.version[subj], TimeUnixNano: 1_700_000_000_000_000_000 + int64(w.last+1)*int64(time.Second),
		SchemaVersion: events.SchemaVersion, Events: anys,
	}
	data, err := events.EncodeBatch(b)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := w.log.Append(ctx, subj, w.lastSeq[subj], b.CommandId, data)
	if err != nil {
		w.t.Fatal(err)
	}
	w.lastSeq[subj], w.last = res.Seq, res.Seq
	return res.Seq
}

func (w *corpusLogWriter) messages(sid string, texts ...string) uint64 {
	e := &memoryv1.MessagesAppended{}
	for i, text := range texts {
		w.msgSeq[sid]++
		n := w.msgSeq[sid]
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		e.Messages = append(e.Messages, &memoryv1.Message{
			Id: fmt.Sprintf("%s-m%d", sid, n), Seq: n, Role: role, Content: text,
			Tokens: uint32(len(text)/4 + 1), Turn: uint32(n+1) / 2, CreatedUnixNano: 1_700_000_000_000_000_000 + int64(n),
		})
	}
	return w.append(events.KindSession, sid, e)
}

func (w *corpusLogWriter) entry(kind, id, key, value string, meta map[string]string) uint64 {
	stored, compressed := sharedmem.EncodeValue([]byte(value))
	return w.append(kind, id, &memoryv1.EntryChanged{Entry: &memoryv1.Entry{
		Key: key, Value: stored, Compressed: compressed, Size: uint32(len(value)),
		ContentType: "text/plain", MemoryType: memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC,
		Version: 1, CreatedUnixNano: 1_700_000_000_000_000_000, CreatedBy: "tester",
		UpdatedUnixNano: 1_700_000_000_000_000_001, UpdatedBy: "tester",
		Change: memoryv1.ChangeKind_CHANGE_KIND_PUT, Metadata: meta,
	}})
}

func (w *corpusLogWriter) datum(id, owner string) uint64 {
	return w.append(largedata.Kind, id, &memoryv1.DataStored{Ref: &memoryv1.DataReference{
		Id: id, Owner: owner, Size: 7, StoredSize: 7, Sha256: "00", ContentType: "text/plain",
	}})
}

// corpusFixture is one log projected into a whole store and three corpus
// partition files, and two nodes reading them: A holds files 0 and 1, B
// file 2, each with its router and its servers on one NATS server.
type corpusFixture struct {
	w        *corpusLogWriter
	js       jetstream.JetStream
	url      string
	full     corpusFile
	files    []corpusFile
	stops    []func() // of the projectors of files
	a, b     *corpusReadModel
	subsA    []*nats.Subscription
	subB     *nats.Subscription
	ncB      *nats.Conn
	sessions []string
	users    []string
}

// mapLocal is a node's local files.
type mapLocal map[int]corpusFile

func (m mapLocal) File(c int) (corpusFile, bool) { f, ok := m[c]; return f, ok }

func (m mapLocal) Any() (corpusFile, bool) {
	for c := range corpusParts {
		if f, ok := m[c]; ok {
			return f, true
		}
	}
	return corpusFile{}, false
}

// startProjector opens a store (partition part of corpusParts; -1: the
// whole log) and runs its projector until stop.
func startProjector(t *testing.T, js jetstream.JetStream, part int, dir string) (corpusFile, func()) {
	t.Helper()
	s, err := projections.Open(filepath.Join(dir, fmt.Sprintf("p%d.db", part)))
	if err != nil {
		t.Fatal(err)
	}
	if part >= 0 {
		if err := s.SetCorpusPartition(corpusParts, part); err != nil {
			t.Fatal(err)
		}
	}
	p, err := projections.NewProjector(projections.Config{}, js, s, events.NewCodec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := corpusFile{s: s, p: p}
	stop := f.run(t)
	t.Cleanup(func() { stop(); _ = s.Close() })
	return f, stop
}

// run runs f's projector until the returned stop (idempotent).
func (f corpusFile) run(t *testing.T) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.p.Run(ctx); err != nil {
			t.Errorf("projector: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

func newCorpusFixture(t *testing.T) *corpusFixture {
	t.Helper()
	srv, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	fx := &corpusFixture{js: js, url: srv.ClientURL(), w: &corpusLogWriter{t: t, log: log, codec: events.NewCodec(),
		version: map[string]uint64{}, lastSeq: map[string]uint64{}, msgSeq: map[string]uint64{}}}
	w := fx.w
	// Sessions of seven users and two without one, of two agents, so that
	// each partition holds some and an agent's sessions span them all.
	fx.users = []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", ""}
	n := 0
	for _, user := range fx.users {
		for j := range 2 {
			sid := fmt.Sprintf("s%d", n)
			agent := []string{"ag1", "ag2"}[n%2]
			n++
			w.append(events.KindSession, sid, &memoryv1.SessionCreated{SessionId: sid, UserId: user, AgentId: agent, App: "app"})
			w.messages(sid, fmt.Sprintf("the zebra of %s sleeps at %d under the porto tree", user, j),
				fmt.Sprintf("noted, zebra %s and the alpha river", sid), "alpha porto zebra "+sid)
			fx.sessions = append(fx.sessions, sid)
			w.entry(projections.ScopeLogKind(sharedmem.KindSession), sid, "note", "session zebra note "+sid, nil)
			w.datum("d-"+sid, "session:"+sid)
		}
		if user != "" {
			w.entry(string(sharedmem.KindUser), user, "pet", "zebra named "+user, map[string]string{"origin": "erase-me"})
			w.entry(string(sharedmem.KindUser), user, "city", "porto alpha "+user, nil)
			w.datum("d-"+user, "user:"+user)
		}
	}
	// An agent whose sessions are all one user's: one partition's page is
	// the whole page, followed by more of its own.
	for j := range 3 {
		sid := fmt.Sprintf("solo%d", j)
		w.append(events.KindSession, sid, &memoryv1.SessionCreated{SessionId: sid, UserId: "u0", AgentId: "solo", App: "app"})
		w.messages(sid, "a solo zebra")
		fx.sessions = append(fx.sessions, sid)
	}
	w.entry(string(sharedmem.KindProject), "p", "plan", "zebra porto plan", map[string]string{"origin": "erase-me"})
	w.entry(string(sharedmem.KindAgent), "ag1", "style", "alpha zebra style", nil)
	w.datum("d-app", "app:x")

	dir := t.TempDir()
	fx.full, _ = startProjector(t, js, -1, dir)
	for c := range corpusParts {
		f, stop := startProjector(t, js, c, dir)
		fx.files, fx.stops = append(fx.files, f), append(fx.stops, stop)
	}
	fx.waitAll(t, w.last)
	held := make([]int, corpusParts)
	for _, sid := range fx.sessions {
		e, _, _ := fx.full.s.Session(sid)
		held[projections.CorpusPartition(e.GetUserId(), corpusParts)]++
	}
	if slices.Contains(held, 0) {
		t.Fatalf("a corpus partition holds no session (%v): the fixture must spread them", held)
	}

	ncB, err := nats.Connect(fx.url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncB.Close)
	fx.ncB = ncB
	fx.a = &corpusReadModel{parts: corpusParts, local: mapLocal{0: fx.files[0], 1: fx.files[1]}, nc: nc, timeout: 3 * time.Second, logger: slog.New(slog.DiscardHandler)}
	fx.b = &corpusReadModel{parts: corpusParts, local: mapLocal{2: fx.files[2]}, nc: ncB, timeout: 3 * time.Second, logger: slog.New(slog.DiscardHandler)}
	sctx, scancel := context.WithCancel(context.Background())
	t.Cleanup(scancel)
	for c := range 2 {
		sub, err := serveCorpus(sctx, nc, c, fx.files[c], nil)
		if err != nil {
			t.Fatal(err)
		}
		fx.subsA = append(fx.subsA, sub)
	}
	fx.subB = fx.serveB(t, sctx)
	return fx
}

func (fx *corpusFixture) serveB(t *testing.T, ctx context.Context) *nats.Subscription {
	sub, err := serveCorpus(ctx, fx.ncB, 2, fx.files[2], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.ncB.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

// waitAll waits until the whole store and every file applied seq.
func (fx *corpusFixture) waitAll(t *testing.T, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, f := range append([]corpusFile{fx.full}, fx.files...) {
		if err := f.p.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorpusReadRouted: through node A (files 0 and 1) and node B (file
// 2), every read of a session, a user, a scope or an owner answers
// exactly what a store of the whole log answers, scores bit for bit,
// whichever node holds the partition; the gathered listings page as the
// whole store pages.
func TestCorpusReadRouted(t *testing.T) {
	fx := newCorpusFixture(t)
	full := readModel{p: fx.full.p, s: fx.full.s, logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	// C holds no file yet (a node just started): its actors' command
	// lookups are answered by another node's file, which holds the whole
	// command index.
	fileless := &corpusReadModel{parts: corpusParts, local: mapLocal{}, nc: fx.a.nc, timeout: 3 * time.Second, logger: slog.New(slog.DiscardHandler)}
	for _, sid := range fx.sessions {
		key := fmt.Sprintf("%s-%s-c1", events.KindSession, sid)
		c1, ok1, err1 := commandIndex{p: fx.full.p, s: fx.full.s}.LookupCommand(ctx, events.KindSession, sid, events.CommandKey("", key), fx.w.last)
		c2, ok2, err2 := fileless.LookupCommand(ctx, events.KindSession, sid, events.CommandKey("", key), fx.w.last)
		if !ok1 || ok1 != ok2 || !proto.Equal(c1, c2) || err1 != nil || err2 != nil {
			t.Fatalf("without a file: LookupCommand(%s) = %v %v %v, want %v %v %v", sid, c2, ok2, err2, c1, ok1, err1)
		}
	}
	for name, r := range map[string]*corpusReadModel{"A": fx.a, "B": fx.b} {
		for _, sid := range append(slices.Clone(fx.sessions), "nope") {
			e1, ok1, err1 := full.Session(sid)
			e2, ok2, err2 := r.Session(sid)
			if ok1 != ok2 || !proto.Equal(e1, e2) || !sameErr(err1, err2) {
				t.Fatalf("%s: Session(%s) = %v %v %v, want %v %v %v", name, sid, e2, ok2, err2, e1, ok1, err1)
			}
			m1, n1, err1 := full.Recall(sid, 0, 50)
			m2, n2, err2 := r.Recall(sid, 0, 50)
			if n1 != n2 || !sameErr(err1, err2) || !equalMsgs(m1, m2) {
				t.Fatalf("%s: Recall(%s) = %d %v %v, want %d %v %v", name, sid, n2, len(m2), err2, n1, len(m1), err1)
			}
			for _, scope := range []memoryv1.SearchScope{memoryv1.SearchScope_SEARCH_SCOPE_SESSION, memoryv1.SearchScope_SEARCH_SCOPE_USER} {
				for _, q := range []string{"zebra", "alpha porto tree", "sleeps"} {
					h1, err1 := full.Search(ctx, sid, scope, q, 20, false)
					h2, err2 := r.Search(ctx, sid, scope, q, 20, false)
					if !sameErr(err1, err2) {
						t.Fatalf("%s: Search(%s, %v, %q): %v, want %v", name, sid, scope, q, err2, err1)
					}
					if d := diffSearchHits(h1, h2); d != "" {
						t.Fatalf("%s: Search(%s, %v, %q): %s", name, sid, scope, q, d)
					}
				}
			}
			d1, err1 := full.DataOwnedBy("session:" + sid)
			d2, err2 := r.DataOwnedBy("session:" + sid)
			if !slices.Equal(d1, d2) || !sameErr(err1, err2) {
				t.Fatalf("%s: DataOwnedBy(session:%s) = %v %v, want %v %v", name, sid, d2, err2, d1, err1)
			}
			t1, err1 := full.TopEntries("session_scope", sid, 10)
			t2, err2 := r.TopEntries("session_scope", sid, 10)
			if !equalProtos(t1, t2) || !sameErr(err1, err2) {
				t.Fatalf("%s: TopEntries(session_scope, %s) = %v %v, want %v %v", name, sid, t2, err2, t1, err1)
			}
		}
		for _, user := range fx.users {
			for _, q := range []string{"zebra", "porto alpha"} {
				h1, err1 := full.SearchUser(user, "", q, 20)
				h2, err2 := r.SearchUser(user, "", q, 20)
				if d := diffSearchHits(h1, h2); d != "" || !sameErr(err1, err2) {
					t.Fatalf("%s: SearchUser(%q, %q): %s %v %v", name, user, q, d, err1, err2)
				}
			}
			if user != "" {
				assertListsEqual(t, name, full, r, &memoryv1.ListSessionsRequest{UserId: user})
				for _, lim := range []int{1, 5} {
					c1, err1 := full.CountSessions(user, "", lim)
					c2, err2 := r.CountSessions(user, "", lim)
					if c1 != c2 || !sameErr(err1, err2) {
						t.Fatalf("%s: CountSessions(%s, %d) = %d, want %d", name, user, lim, c2, c1)
					}
				}
				assertEntriesEqual(t, name, full, r, "user", user)
				d1, _ := full.DataOwnedBy("user:" + user)
				d2, err := r.DataOwnedBy("user:" + user)
				if !slices.Equal(d1, d2) || err != nil || len(d1) != 1 {
					t.Fatalf("%s: DataOwnedBy(user:%s) = %v %v, want %v", name, user, d2, err, d1)
				}
				b1, _ := full.DataBytes("user:" + user)
				if b2, err := r.DataBytes("user:" + user); b1 != b2 || err != nil {
					t.Fatalf("%s: DataBytes(user:%s) = %d %v, want %d", name, user, b2, err, b1)
				}
			}
		}
		assertEntriesEqual(t, name, full, r, "project", "p")
		assertEntriesEqual(t, name, full, r, "agent", "ag1")
		if txt, ok := r.EntryText("user:u3", "pet", 1); !ok || txt != "zebra named u3" {
			t.Fatalf("%s: EntryText(user:u3, pet) = %q %v", name, txt, ok)
		}
		if _, ok := r.EntryText("user:nobody", "pet", 1); ok {
			t.Fatalf("%s: EntryText of a missing entry found", name)
		}
		d1, _ := full.DataOwnedBy("app:x")
		if d2, err := r.DataOwnedBy("app:x"); !slices.Equal(d1, d2) || err != nil || len(d1) != 1 {
			t.Fatalf("%s: DataOwnedBy(app:x) = %v %v, want %v", name, d2, err, d1)
		}
		for _, req := range []*memoryv1.ListSessionsRequest{
			{AgentId: "ag1", Limit: 2}, {AgentId: "ag2", Limit: 3}, {AgentId: "solo", Limit: 2}, {AgentId: "solo", Limit: 1}, {Limit: 2}, {}, {Limit: 100},
			{AgentId: "ag1", Status: memoryv1.SessionStatus_SESSION_STATUS_CREATED, Limit: 4},
		} {
			assertListsEqual(t, name, full, r, req)
		}
		_, _, err1 := full.ListSessions(&memoryv1.ListSessionsRequest{Limit: 101})
		if _, _, err2 := r.ListSessions(&memoryv1.ListSessionsRequest{Limit: 101}); !sameErr(err1, err2) || err1 == nil {
			t.Fatalf("%s: ListSessions(limit 101) = %v, want %v", name, err2, err1)
		}
		_, _, err1 = full.ListSessions(&memoryv1.ListSessionsRequest{UserId: "u1", PageToken: "!!"})
		if _, _, err2 := r.ListSessions(&memoryv1.ListSessionsRequest{UserId: "u1", PageToken: "!!"}); !sameErr(err1, err2) || err1 == nil {
			t.Fatalf("%s: ListSessions(bad token) = %v, want %v", name, err2, err1)
		}
		for _, lim := range []int{1, 3, 8, 100} {
			c1, _ := full.CountSessions("", "ag1", lim)
			if c2, err := r.CountSessions("", "ag1", lim); c1 != c2 || err != nil {
				t.Fatalf("%s: CountSessions(agent ag1, %d) = %d %v, want %d", name, lim, c2, err, c1)
			}
		}
		m1, _ := full.EntriesWithMetadata("origin", "erase-me")
		m2, err := r.EntriesWithMetadata("origin", "erase-me")
		if !slices.Equal(m1, m2) || err != nil || len(m1) != 8 {
			t.Fatalf("%s: EntriesWithMetadata = %v %v, want %v", name, m2, err, m1)
		}
		for _, sid := range fx.sessions {
			key := fmt.Sprintf("%s-%s-c1", events.KindSession, sid)
			c1, ok1, err1 := commandIndex{p: fx.full.p, s: fx.full.s}.LookupCommand(ctx, events.KindSession, sid, events.CommandKey("", key), fx.w.last)
			c2, ok2, err2 := r.LookupCommand(ctx, events.KindSession, sid, events.CommandKey("", key), fx.w.last)
			if !ok1 || ok1 != ok2 || !proto.Equal(c1, c2) || err1 != nil || err2 != nil {
				t.Fatalf("%s: LookupCommand(%s) = %v %v %v, want %v %v %v", name, sid, c2, ok2, err2, c1, ok1, err1)
			}
		}
	}
}

// TestCorpusReadAfterWrite: a read through A of a session B holds, asked
// after A's files applied a write B's file has not, waits on B until its
// file applied it, and sees it.
func TestCorpusReadAfterWrite(t *testing.T) {
	fx := newCorpusFixture(t)
	var sid string
	for _, s := range fx.sessions {
		if c, _, _ := fx.files[0].s.SessionCorpus(s); projections.CorpusPartition(c, corpusParts) == 2 {
			sid = s
			break
		}
	}
	fx.stops[2]()
	seq := fx.w.messages(sid, "a late giraffe")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range fx.files[:2] {
		if err := f.p.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	if fx.files[2].p.AppliedSeq() >= seq {
		t.Fatal("file 2 applied the write with its projector stopped")
	}
	type result struct {
		n   uint64
		err error
	}
	got := make(chan result, 1)
	go func() {
		_, n, err := fx.a.Recall(sid, 0, 50)
		got <- result{n, err}
	}()
	time.Sleep(200 * time.Millisecond)
	stop := fx.files[2].run(t)
	defer stop()
	r := <-got
	if r.err != nil || r.n != 4 {
		t.Fatalf("Recall(%s) through A = %d messages, %v; want 4 (the write A saw)", sid, r.n, r.err)
	}
}

// TestCorpusReadUnserved: a read of a partition no node serves is a 503
// naming it once the router's timeout passed; served again, it answers.
// Many reads leave no goroutine and no subscription behind.
func TestCorpusReadUnserved(t *testing.T) {
	fx := newCorpusFixture(t)
	var sid string
	for _, s := range fx.sessions {
		if c, _, _ := fx.files[0].s.SessionCorpus(s); projections.CorpusPartition(c, corpusParts) == 2 {
			sid = s
			break
		}
	}
	// One read first: a connection's first request subscribes its
	// responses' inbox, once.
	for _, r := range []*corpusReadModel{fx.a, fx.b} {
		if _, _, err := r.ListSessions(&memoryv1.ListSessionsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	base := goruntime.NumGoroutine()
	subsBefore := fx.ncB.NumSubscriptions() + fx.a.nc.NumSubscriptions()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if _, _, err := fx.a.Recall(sid, 0, 10); err != nil {
					t.Error(err)
				}
				if _, _, err := fx.a.ListSessions(&memoryv1.ListSessionsRequest{AgentId: "ag1", Limit: 2}); err != nil {
					t.Error(err)
				}
				if _, err := fx.b.SearchUser("u1", "", "zebra", 5); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := fx.ncB.NumSubscriptions() + fx.a.nc.NumSubscriptions(); n != subsBefore {
		t.Fatalf("subscriptions: %d after the reads, %d before", n, subsBefore)
	}
	waitGoroutines(t, base)

	if err := fx.subB.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := fx.ncB.Flush(); err != nil {
		t.Fatal(err)
	}
	fx.a.timeout = 300 * time.Millisecond
	start := time.Now()
	_, _, err := fx.a.Recall(sid, 0, 10)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != 503 || !strings.Contains(ae.Message, "corpus partition 2 of 3") {
		t.Fatalf("Recall of an unserved partition = %v, want a 503 naming corpus partition 2", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("the 503 came after %s, before the timeout", d)
	}
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	fx.a.timeout = 5 * time.Second
	go func() { _, _, err := fx.a.Recall(sid, 0, 10); done <- err }()
	time.Sleep(150 * time.Millisecond)
	fx.serveB(t, sctx)
	if err := <-done; err != nil {
		t.Fatalf("Recall retried until a node served the partition: %v", err)
	}
	// The owner's errors keep their meaning across the hop.
	_, _, err = fx.a.Recall(sid, 0, 1000)
	_, _, want := readModel{p: fx.files[2].p, s: fx.files[2].s}.Recall(sid, 0, 1000)
	if !sameErr(err, want) || !errors.As(err, &ae) || ae.Code != 400 || ae.Field == "" {
		t.Fatalf("Recall(limit 1000) through A = %v, want %v (an *api.Error 400 naming its field)", err, want)
	}
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := goruntime.NumGoroutine()
		if n <= base+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d after the reads, %d before\n%s", n, base, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func assertListsEqual(t *testing.T, name string, full readModel, r *corpusReadModel, req *memoryv1.ListSessionsRequest) {
	t.Helper()
	req = proto.Clone(req).(*memoryv1.ListSessionsRequest)
	for page := 0; ; page++ {
		e1, n1, err1 := full.ListSessions(req)
		e2, n2, err2 := r.ListSessions(req)
		if !equalProtos(e1, e2) || n1 != n2 || !sameErr(err1, err2) {
			t.Fatalf("%s: ListSessions(%v) page %d = %d sessions next %q %v, want %d next %q %v", name, req, page, len(e2), n2, err2, len(e1), n1, err1)
		}
		if n1 == "" || page > 20 {
			return
		}
		req.PageToken = n1
	}
}

func assertEntriesEqual(t *testing.T, name string, full readModel, r *corpusReadModel, kind, id string) {
	t.Helper()
	t1, err1 := full.TopEntries(kind, id, 10)
	t2, err2 := r.TopEntries(kind, id, 10)
	if !equalProtos(t1, t2) || !sameErr(err1, err2) || len(t1) == 0 {
		t.Fatalf("%s: TopEntries(%s, %s) = %v %v, want %v %v", name, kind, id, t2, err2, t1, err1)
	}
	for _, q := range []string{"zebra", "porto alpha"} {
		req := &memoryv1.SearchEntriesRequest{Query: q, Limit: 10}
		h1, err1 := full.SearchEntries(kind, id, req)
		h2, err2 := r.SearchEntries(kind, id, req)
		if !sameErr(err1, err2) || len(h1) != len(h2) {
			t.Fatalf("%s: SearchEntries(%s, %s, %q) = %d hits %v, want %d %v", name, kind, id, q, len(h2), err2, len(h1), err1)
		}
		for i := range h1 {
			if !proto.Equal(h1[i], h2[i]) || math.Float64bits(h1[i].GetScore()) != math.Float64bits(h2[i].GetScore()) {
				t.Fatalf("%s: SearchEntries(%s, %s, %q) hit %d = %v, want %v", name, kind, id, q, i, h2[i], h1[i])
			}
		}
	}
}

func diffSearchHits(want, got []*memoryv1.SearchHit) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d hits, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(want[i], got[i]) || math.Float64bits(want[i].GetScore()) != math.Float64bits(got[i].GetScore()) {
			return fmt.Sprintf("hit %d = %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

func equalProtos[M proto.Message](a, b []M) bool {
	return slices.EqualFunc(a, b, func(x, y M) bool { return proto.Equal(x, y) })
}

func equalMsgs(a, b []*memoryv1.Message) bool { return equalProtos(a, b) }

// sameErr: both nil, or the same text (an *api.Error the same code, field
// and message).
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y *api.Error
	if errors.As(a, &x) != errors.As(b, &y) {
		return false
	}
	if x != nil {
		return x.Code == y.Code && x.Field == y.Field && x.Message == y.Message
	}
	return a.Error() == b.Error()
}
