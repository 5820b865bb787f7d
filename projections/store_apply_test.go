package projections

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestApplyBoundedStops: a transaction whose context ends between two
// records rolls back (nothing of the batch, the checkpoint where it was)
// and the same records applied again give the read model of one ApplyBatch;
// a transaction past its deadline commits the records it went through (at
// least one) and leaves the rest to the caller.
func TestApplyBoundedStops(t *testing.T) {
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	for range 20 {
		l.appendMsgs("s1", "the deploy failed", "retry the migration")
	}
	ref := openTestStore(t)
	mustApply(t, ref, l.recs)

	s := openTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := s.applyBounded(ctx, l.recs, time.Time{}); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("cancelled: applied %d, err %v; want 0 and context.Canceled", n, err)
	}
	if got := s.AppliedSeq(); got != 0 {
		t.Fatalf("checkpoint %d after a rolled-back batch", got)
	}
	recs := l.recs
	for len(recs) > 0 {
		n, err := s.applyBounded(context.Background(), recs, time.Now().Add(-time.Second)) // always past
		if err != nil || n != 1 {
			t.Fatalf("past its deadline: applied %d, err %v; want exactly 1", n, err)
		}
		if got, want := s.AppliedSeq(), recs[0].Seq; got != want {
			t.Fatalf("checkpoint %d, want %d", got, want)
		}
		recs = recs[n:]
	}
	got, err := s.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := VerifyDigests(want, got); diff != nil {
		t.Fatalf("record by record differs from one batch: %v", diff)
	}
}

// TestEntryIndexOneTransaction: keys indexed, replaced (past the index cap
// too) and deleted within ONE transaction (entryPending: a posting added
// and dropped before the flush) leave the index consistent and the same as
// applying the records one transaction each.
func TestEntryIndexOneTransaction(t *testing.T) {
	l := newScopeLog(t)
	long := strings.Repeat("pelican harbour ", sharedmem.MaxIndexedValueBytes/8) + "flamingo"
	for i := range 12 {
		key := fmt.Sprintf("k%d", i%3)
		l.record("agent", "a1", l.put("agent", "a1", key, fmt.Sprintf("note %d about the deploy %s", i, long[:i*len(long)/11])))
	}
	l.record("agent", "a1", l.del("agent", "a1", "k1"))
	one := openTestStore(t)
	mustApply(t, one, l.recs)
	checkEntryIndex(t, one)
	each := openTestStore(t)
	for i := range l.recs {
		mustApply(t, each, l.recs[i:i+1])
	}
	checkEntryIndex(t, each)
	a, err := one.Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := each.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := VerifyDigests(b, a); diff != nil {
		t.Fatalf("one transaction differs from one per record: %v", diff)
	}
	if keys := searchKeys(t, one, "agent", "a1", &memoryv1.SearchEntriesRequest{Query: "flamingo"}); len(keys) != 0 {
		t.Fatalf("a word past the index cap found: %v", keys)
	}
	if keys := searchKeys(t, one, "agent", "a1", &memoryv1.SearchEntriesRequest{Query: "pelican"}); len(keys) != 2 {
		t.Fatalf("pelican: %v, want k0 and k2", keys)
	}
}

// TestFlushSortsAheadSameContent: a transaction holding more than
// sortAheadMin message, id and command Puts (sorted in another goroutine
// while the BM25 index is written) leaves the content that the same
// records applied in small transactions (sorted in line) leave.
func TestFlushSortsAheadSameContent(t *testing.T) {
	l := newLogBuilder(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 40 {
		l.create(fmt.Sprintf("s%02d", i), fmt.Sprintf("u%d", i%3), "")
	}
	for n := 0; n < sortAheadMin+1000; {
		sid := fmt.Sprintf("s%02d", rng.IntN(40))
		texts := make([]string, 1+rng.IntN(3))
		for j := range texts {
			texts[j] = benchText(rng)
		}
		l.appendMsgs(sid, texts...)
		n += 2 + len(texts) // a command, and a message and an id per text
	}
	big := openTestStore(t)
	mustApply(t, big, l.recs)
	small := openTestStore(t)
	for i := 0; i < len(l.recs); i += 7 {
		mustApply(t, small, l.recs[i:min(len(l.recs), i+7)])
	}
	assertSameDigest(t, big, small)
}
