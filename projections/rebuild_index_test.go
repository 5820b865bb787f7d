package projections

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestIndexStageMatchesLive feeds the log of erasureLog (messages, an
// archived summary, scope entries, large data, a removal) and messages
// after it through Rebuild's index stage and writer, three records per
// read batch and transactions of one batch: transactions of plain session
// records are indexed ahead, a record of another kind ends one (mid-batch)
// and starts one the writer indexes, and the file holds what ApplyBatch
// gives (Digest).
func TestIndexStageMatchesLive(t *testing.T) {
	l, removal := erasureLog(t)
	l.recs = append(l.recs, removal)
	l.appendMsgs("b", "zebra after the removal", "and porto again")
	l.appendMsgs("c", "crossing zebra", "")
	l.create("d", "u", "ag")
	l.appendMsgs("d", "a new session of u mentions alpha")
	recs := l.recs

	live := openTestStore(t)
	for i := 0; i < len(recs); i += 4 {
		mustApply(t, live, recs[i:min(i+4, len(recs))])
	}
	want, err := live.Digest()
	if err != nil {
		t.Fatal(err)
	}

	defer func(old uint64) { rebuildChunkRecords = old }(rebuildChunkRecords)
	rebuildChunkRecords = 1
	in := make(chan *readBatch, len(recs))
	for i := 0; i < len(recs); i += 3 {
		b := &readBatch{recs: recs[i:min(i+3, len(recs))], ready: make(chan struct{})}
		b.prepare()
		close(b.ready)
		in <- b
	}
	close(in)
	st, err := openStore(filepath.Join(t.TempDir(), "p.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	items := indexChunks(context.Background(), in, 1)
	ahead, behind := 0, 0
	counted := &chunkQueue{ch: make(chan chunkItem)}
	go func() {
		defer close(counted.ch)
		for it, ok := items.next(); ok; it, ok = items.next() {
			switch {
			case it.end && it.pre != nil:
				ahead++
			case it.end:
				behind++
			}
			counted.ch <- it
		}
	}()
	var applied uint64
	for more := true; more; {
		n, _, m, err := st.applyChunk(counted)
		if err != nil {
			t.Fatal(err)
		}
		applied, more = applied+n, m
	}
	if applied != uint64(len(recs)) {
		t.Fatalf("applied %d records of %d", applied, len(recs))
	}
	if ahead == 0 || behind == 0 {
		t.Fatalf("%d transactions indexed ahead, %d by the writer: want both", ahead, behind)
	}
	got, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := VerifyDigests(want, got); diff != nil {
		t.Fatalf("index stage differs from live: %v", diff)
	}
}

// TestIndexStageQueueBoundedByBytes: with the writer busy (nothing
// received), the index stage goes on reading and grouping until the
// records queued for the writer reach rebuildQueueBytes of encoded bytes —
// far more items than the reader's queue holds — and no further; the items
// then arrive in log order, and a stage blocked on a full queue stops when
// its context ends.
func TestIndexStageQueueBoundedByBytes(t *testing.T) {
	l := newLogBuilder(t)
	l.create("s", "u", "ag")
	for i := range 400 {
		l.appendMsgs("s", fmt.Sprintf("message %04d about the zebra crossing", i))
	}
	recs := l.recs
	batches := func() (<-chan *readBatch, []int64) {
		in := make(chan *readBatch, len(recs))
		var sizes []int64
		for i := range recs {
			b := &readBatch{recs: recs[i : i+1], ready: make(chan struct{})}
			b.prepare()
			close(b.ready)
			sizes = append(sizes, int64(b.bytes))
			in <- b
		}
		close(in)
		return in, sizes
	}
	in, sizes := batches()
	defer func(old int64) { rebuildQueueBytes = old }(rebuildQueueBytes)
	rebuildQueueBytes = 0 // room for the first 60 records, not 61
	for _, s := range sizes[:60] {
		rebuildQueueBytes += s
	}
	if 60 <= rebuildQueue {
		t.Fatalf("the bound must hold more records than the reader's queue (%d)", rebuildQueue)
	}

	q := indexChunks(context.Background(), in, 1)
	deadline := time.Now().Add(10 * time.Second)
	for len(q.ch) < 60 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the stage would go on if it could
	if n := len(q.ch); n != 60 {
		t.Fatalf("%d items queued for a busy writer, want 60 (bytes bound %d)", n, rebuildQueueBytes)
	}
	var seqs []uint64
	for it, ok := q.next(); ok; it, ok = q.next() {
		for _, r := range it.recs {
			seqs = append(seqs, r.Seq)
		}
	}
	if len(seqs) != len(recs) {
		t.Fatalf("received %d records, want %d", len(seqs), len(recs))
	}
	for i, s := range seqs {
		if s != recs[i].Seq {
			t.Fatalf("record %d has sequence %d, want %d", i, s, recs[i].Seq)
		}
	}

	in, _ = batches()
	ctx, cancel := context.WithCancel(context.Background())
	q = indexChunks(ctx, in, 1)
	for len(q.ch) < 60 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		q.drain()
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the index stage did not stop on its context")
	}
}

// TestIndexStagePartitions: the batches of two log partitions go through
// one index stage and writer, as RebuildPartitions sends them; each
// transaction holds one partition's records (none mixes them, although
// the chunk bounds would allow it), each partition's checkpoint ends at
// its last record, and the file holds what applying the partitions one
// after the other gives (Digest).
func TestIndexStagePartitions(t *testing.T) {
	logs := []*logBuilder{newLogBuilder(t), newLogBuilder(t)}
	for p, l := range logs {
		for s := range 2 {
			sid := fmt.Sprintf("p%ds%d", p, s)
			l.create(sid, fmt.Sprintf("u%d", s), "ag")
			for i := range 5 {
				l.appendMsgs(sid, fmt.Sprintf("partition %d session %d message %d about zebras", p, s, i), "and porto")
			}
		}
	}
	live := openTestStore(t)
	if err := live.SetLogPartitions(2); err != nil {
		t.Fatal(err)
	}
	for p, l := range logs {
		if _, err := live.applyBoundedIn(context.Background(), p, l.recs, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := live.Digest()
	if err != nil {
		t.Fatal(err)
	}

	in := make(chan *readBatch, 64)
	for p, l := range logs {
		for i := 0; i < len(l.recs); i += 4 {
			b := &readBatch{part: p, recs: l.recs[i:min(i+4, len(l.recs))], ready: make(chan struct{})}
			b.prepare()
			close(b.ready)
			in <- b
		}
	}
	close(in)
	st, err := openStore(filepath.Join(t.TempDir(), "p.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetLogPartitions(2); err != nil {
		t.Fatal(err)
	}
	items := indexChunks(context.Background(), in, 1)
	var parts []int
	for more := true; more; {
		n, part, m, err := st.applyChunk(items)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			parts = append(parts, part)
		}
		more = m
	}
	if !slices.Equal(parts, []int{0, 1}) {
		t.Fatalf("transactions of partitions %v, want one of 0 then one of 1", parts)
	}
	for p, l := range logs {
		if got, want := st.AppliedSeqOf(p), l.recs[len(l.recs)-1].Seq; got != want {
			t.Fatalf("partition %d checkpoint %d, want %d", p, got, want)
		}
	}
	got, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := VerifyDigests(want, got); diff != nil {
		t.Fatalf("partitions through one index stage differ from applying them in turn: %v", diff)
	}
}
