package projections

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// corpusLog is erasureLog's log (users u and v, a user and a project
// scope, large data, a removal of session a and user:u) with the sessions
// of eight more users, so that every corpus partition of three holds some.
func corpusLog(t *testing.T) (*scopeLog, Decoded) {
	l, removal := erasureLog(t)
	for i := range 16 {
		sid, user := fmt.Sprintf("x%d", i), fmt.Sprintf("user-%d", i%8)
		l.create(sid, user, "ag")
		l.appendMsgs(sid, fmt.Sprintf("the zebra of %s sleeps at %d", user, i), "noted, zebra "+sid)
		l.record("user", user, l.put("user", user, "pet", "zebra named "+sid))
	}
	l.record(dataKind, "d2", &memoryv1.DataStored{Ref: &memoryv1.DataReference{
		Id: "d2", Owner: "session:x3", Size: 7, StoredSize: 7, Sha256: "00", ContentType: "text/plain",
	}})
	removal.Seq = l.seq + 1 // after the records added here
	return l, removal
}

// TestCorpusPartitions: three stores each holding one corpus partition of
// three, fed every record of the log, answer for the corpora they hold
// exactly as a store of the whole log does (session, recall, search in
// session and user scope, a user's entries), hold nothing of the others,
// and know every session's corpus. A removal erases from each what it
// holds and drops the routes of what it erased.
func TestCorpusPartitions(t *testing.T) {
	const parts = 3
	l, removal := corpusLog(t)
	full := openTestStore(t)
	mustApply(t, full, l.recs)
	stores := make([]*Store, parts)
	for i := range stores {
		stores[i] = openTestStore(t)
		if err := stores[i].SetCorpusPartition(parts, i); err != nil {
			t.Fatal(err)
		}
		mustApply(t, stores[i], l.recs)
		if got := stores[i].AppliedSeq(); got != full.AppliedSeq() {
			t.Fatalf("store %d checkpoint %d, want %d (every record read)", i, got, full.AppliedSeq())
		}
	}
	sessions := []string{"a", "b", "c"}
	for i := range 16 {
		sessions = append(sessions, fmt.Sprintf("x%d", i))
	}
	held := make([]int, parts)
	for _, sid := range sessions {
		want, _, err := full.Session(sid)
		if err != nil {
			t.Fatal(err)
		}
		owner := CorpusPartition(want.GetUserId(), parts)
		held[owner]++
		for i, s := range stores {
			got, ok, err := s.Session(sid)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (i == owner) {
				t.Fatalf("store %d holds session %s: %v, want %v (its corpus %q is partition %d)", i, sid, ok, i == owner, want.GetUserId(), owner)
			}
			if corpus, known, err := s.SessionCorpus(sid); err != nil || !known || corpus != want.GetUserId() {
				t.Fatalf("store %d: SessionCorpus(%s) = %q %v %v, want %q", i, sid, corpus, known, err, want.GetUserId())
			}
			if i == owner && !proto.Equal(got, want) {
				t.Fatalf("store %d: Session(%s) = %v, want %v", i, sid, got, want)
			}
		}
		own := stores[owner]
		m1, n1, err1 := full.Recall(sid, 0, 50)
		m2, n2, err2 := own.Recall(sid, 0, 50)
		if err1 != nil || err2 != nil || n1 != n2 || !sameMessages(m1, m2) {
			t.Fatalf("Recall(%s): %d vs %d (%v, %v)", sid, n1, n2, err1, err2)
		}
		for _, scope := range []memoryv1.SearchScope{memoryv1.SearchScope_SEARCH_SCOPE_SESSION, memoryv1.SearchScope_SEARCH_SCOPE_USER} {
			for _, q := range []string{"zebra", "zebra porto alpha", "sleeps"} {
				h1, err1 := full.Search(sid, scope, q, 20)
				h2, err2 := own.Search(sid, scope, q, 20)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if d := diffHits(h1, h2); d != "" {
					t.Fatalf("Search(%s, %v, %q): %s", sid, scope, q, d)
				}
			}
		}
	}
	for i, n := range held {
		if n == 0 {
			t.Fatalf("corpus partition %d holds no session: the fixture must spread them (%v)", i, held)
		}
	}
	// Scopes: a user's in the user's partition, the shared ones in "".
	for i := range 8 {
		user := fmt.Sprintf("user-%d", i)
		want, ok, _ := full.Entry("user", user, "pet")
		for p, s := range stores {
			got, has, err := s.Entry("user", user, "pet")
			if err != nil || has != (p == CorpusPartition(user, parts)) || (has && !proto.Equal(got, want)) || !ok {
				t.Fatalf("store %d: Entry(user:%s/pet) held %v, want %v", p, user, has, p == CorpusPartition(user, parts))
			}
		}
	}
	for p, s := range stores {
		_, has, _ := s.Entry("project", "p", "plan")
		if has != (p == CorpusPartition("", parts)) {
			t.Fatalf("store %d holds project:p/plan: %v", p, has)
		}
		ids, err := s.DataOwnedBy("session:x3")
		if err != nil {
			t.Fatal(err)
		}
		if want := p == CorpusPartition("user-3", parts); (len(ids) == 1) != want {
			t.Fatalf("store %d: data of session:x3 %v, want held %v", p, ids, want)
		}
	}

	// The removal of session a and user:u: erased wherever it was held,
	// and its route gone from every store.
	mustApply(t, full, []Decoded{removal})
	for i, s := range stores {
		mustApply(t, s, []Decoded{removal})
		if _, known, _ := s.SessionCorpus("a"); known {
			t.Fatalf("store %d still routes the erased session a", i)
		}
		if _, ok, _ := s.Session("a"); ok {
			t.Fatalf("store %d still holds the erased session a", i)
		}
		if _, known, _ := s.SessionCorpus("b"); !known {
			t.Fatalf("store %d lost the route of session b", i)
		}
	}
	h1, _ := full.Search("b", memoryv1.SearchScope_SEARCH_SCOPE_USER, "zebra", 20)
	h2, _ := stores[CorpusPartition("u", parts)].Search("b", memoryv1.SearchScope_SEARCH_SCOPE_USER, "zebra", 20)
	if d := diffHits(h1, h2); d != "" {
		t.Fatalf("user-scope search after the removal: %s", d)
	}
}

// TestCorpusPartitionRecorded: the partition is recorded in the file and
// read at Open; another partition, or a partition for a file that holds
// the whole log, is refused.
func TestCorpusPartitionRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetCorpusPartition(4, 1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if part, parts := s.CorpusPartitionOf(); part != 1 || parts != 4 {
		t.Fatalf("reopened: partition %d of %d, want 1 of 4", part, parts)
	}
	if err := s.SetCorpusPartition(4, 2); !errors.Is(err, ErrCorpusPartition) {
		t.Fatalf("another partition: %v, want ErrCorpusPartition", err)
	}
	if err := s.SetCorpusPartition(4, 1); err != nil {
		t.Fatalf("the same partition again: %v", err)
	}
	s.Close()

	whole := openTestStore(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "a")
	mustApply(t, whole, l.recs)
	if err := whole.SetCorpusPartition(2, 0); !errors.Is(err, ErrCorpusPartition) {
		t.Fatalf("a file of the whole log: %v, want ErrCorpusPartition", err)
	}
}
