package projections

import (
	"context"
	"path/filepath"
	"testing"
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
	counted := make(chan chunkItem)
	go func() {
		defer close(counted)
		for it := range items {
			switch {
			case it.end && it.pre != nil:
				ahead++
			case it.end:
				behind++
			}
			counted <- it
		}
	}()
	var applied uint64
	for more := true; more; {
		n, m, err := st.applyChunkIn(0, counted)
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
