package projections

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// erasureLog is a log of three sessions (a and b of user u, c of user v)
// with shared words, entries in user:u and project:p, large data, and then
// a removal that erases session a and the scope user:u. It returns the
// records before the removal and the removal record.
func erasureLog(t *testing.T) (*scopeLog, Decoded) {
	t.Helper()
	l := newScopeLog(t)
	l.create("a", "u", "ag")
	l.create("b", "u", "ag")
	l.create("c", "v", "ag")
	for i := range 3 {
		l.appendMsgs("a", "the zebra marker alpha lives in Porto", "ok zebra noted "+string(rune('a'+i)))
		l.appendMsgs("b", "the zebra in Lisbon is different", "fine")
		l.appendMsgs("c", "zebra crossing near the office", "right")
	}
	l.add("a", &memoryv1.L2Archived{Summaries: []*memoryv1.Summary{{Id: "s1", Text: "zebra alpha summary", FirstSeq: 1, LastSeq: 2, Tokens: 4}}})
	l.record("user", "u", l.put("user", "u", "home", "Porto zebra alpha"))
	l.record("user", "u", l.put("user", "u", "home", "Porto zebra alpha v2"))
	l.record("project", "p", l.put("project", "p", "plan", "zebra launch friday"), l.put("project", "p", "other", "unrelated thing"))
	l.storeData("d1", 10)
	l.appendMsgs("b", "zebra again after")

	var removed []uint64
	for _, r := range l.recs {
		if r.Subject == events.SessionSubject("a") || r.Subject == events.ScopeSubject("user", "u") {
			removed = append(removed, r.Seq)
		}
	}
	rm := &memoryv1.LogRemoval{
		Id: "r1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "user:u",
		Subjects: []string{events.SessionSubject("a"), events.ScopeSubject("user", "u")},
		Removed:  events.RemovalSpans(events.Spans(removed)),
		Erased:   []string{"session.a", "user.u"},
		Messages: uint64(len(removed)),
	}
	l.record(events.KindRemoval, "r1", rm)
	rec := l.recs[len(l.recs)-1]
	l.recs = l.recs[:len(l.recs)-1]
	return l, rec
}

// TestEraseMatchesRebuild: applying a removal to a live read model deletes
// every row of the erased aggregates (search, swap, sessions, entries) and
// leaves the read model a Rebuild of the log without their messages gives.
func TestEraseMatchesRebuild(t *testing.T) {
	l, removal := erasureLog(t)
	live := openTestStore(t)
	mustApply(t, live, l.recs)
	mustApply(t, live, []Decoded{removal})

	// Read paths of the erased aggregates.
	if _, ok, err := live.Session("a"); err != nil || ok {
		t.Fatalf("Session(a) after erase: ok=%v err=%v", ok, err)
	}
	for _, scope := range []memoryv1.SearchScope{memoryv1.SearchScope_SEARCH_SCOPE_SESSION, memoryv1.SearchScope_SEARCH_SCOPE_USER} {
		hits, err := live.Search("b", scope, "alpha porto", 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.GetSessionId() == "a" {
				t.Fatalf("search %v found erased session a: %v", scope, h)
			}
		}
	}
	if msgs, _, err := live.Recall("a", 0, 50); err != nil || len(msgs) != 0 {
		t.Fatalf("Recall(a) after erase = %d messages, %v", len(msgs), err)
	}
	if sums, err := live.ArchivedSummaries("a"); err != nil || len(sums) != 0 {
		t.Fatalf("ArchivedSummaries(a) = %d, %v", len(sums), err)
	}
	if _, ok, _ := live.Entry("user", "u", "home"); ok {
		t.Fatal("entry user:u/home readable after erase")
	}
	if h, _ := live.EntryHistory("user", "u", "home"); len(h) != 0 {
		t.Fatalf("history of user:u/home after erase: %d versions", len(h))
	}
	if hits, err := live.SearchEntries("user", "u", &memoryv1.SearchEntriesRequest{Query: "porto"}); err != nil || len(hits) != 0 {
		t.Fatalf("SearchEntries(user:u) after erase = %v, %v", hits, err)
	}
	// What was not erased is still there.
	if _, ok, _ := live.Entry("project", "p", "plan"); !ok {
		t.Fatal("project:p/plan lost by an erasure of user:u")
	}
	if hits, _ := live.Search("b", memoryv1.SearchScope_SEARCH_SCOPE_USER, "zebra lisbon", 20); len(hits) == 0 {
		t.Fatal("session b's messages no longer found")
	}

	// The same rows as the log without the erased messages.
	var kept []Decoded
	for _, r := range l.recs {
		if r.Subject != events.SessionSubject("a") && r.Subject != events.ScopeSubject("user", "u") {
			kept = append(kept, r)
		}
	}
	kept = append(kept, removal)
	ref := openTestStore(t)
	mustApply(t, ref, kept)
	assertSameDigest(t, live, ref)

	// Erasing what is already gone (a removal resumed after a crash, a
	// second erase) changes nothing.
	rm2 := proto.Clone(removal.Events[0]).(*memoryv1.LogRemoval)
	rm2.Id = "r2"
	l.record(events.KindRemoval, "r2", rm2)
	second := l.recs[len(l.recs)-1:]
	mustApply(t, live, second)
	mustApply(t, ref, second)
	assertSameDigest(t, live, ref)
}

func assertSameDigest(t *testing.T, a, b *Store) {
	t.Helper()
	da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(maps.Keys(da)) {
		if da[k] != db[k] {
			t.Errorf("bucket %s differs after the erasure", k)
		}
	}
}

// TestRebuildAcceptsLedgerGaps: Rebuild reads a JetStream log whose erased
// messages are purged, accepting exactly the sequences the removal ledger
// lists, and gives the live read model; a gap the ledger does not list is
// still refused.
func TestRebuildAcceptsLedgerGaps(t *testing.T) {
	l, removal := erasureLog(t)
	cfg := events.DefaultJetStreamConfig()
	cfg.AllowDelete = true
	js, log := testJSWith(t, cfg)
	all := append(slices.Clone(l.recs), removal)
	publish(t, log, all)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, subj := range removal.Events[0].(*memoryv1.LogRemoval).GetSubjects() {
		if err := log.RemoveSubject(ctx, subj, removal.Seq); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "p.db")
	if _, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second)); err != nil {
		t.Fatalf("Rebuild after an erasure: %v", err)
	}
	rebuilt, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	live := openTestStore(t)
	mustApply(t, live, all)
	assertSameDigest(t, live, rebuilt)

	// Session b's last message was never listed: removing it is a gap.
	last := l.recs[len(l.recs)-1]
	if err := log.RemoveSubject(ctx, last.Subject, last.Seq); err != nil {
		t.Fatal(err)
	}
	_, err = Rebuild(ctx, js, events.StreamName, filepath.Join(t.TempDir(), "q.db"), testCodec, nil, WithIdleTimeout(time.Second))
	if err == nil {
		t.Fatal("Rebuild accepted a gap the removal ledger does not list")
	}
	t.Logf("refused as expected: %v", err)
}
