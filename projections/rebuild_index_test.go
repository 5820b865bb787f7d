package projections

import (
	"context"
	"path/filepath"
	"testing"
)

// TestIndexStageMatchesLive feeds the log of erasureLog (messages, an
// archived summary, scope entries, large data, a removal) and messages
// after it through Rebuild's index stage and writer, three records per
// read batch and one batch per transaction: chunks of plain session records
// are indexed ahead, the others by the writer, and the file holds what
// ApplyBatch gives (Digest).
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
	ahead, behind := 0, 0
	for c := range indexChunks(context.Background(), in) {
		if c.pre != nil {
			ahead++
		} else {
			behind++
		}
		if _, err := st.applyChunk(c); err != nil {
			t.Fatal(err)
		}
	}
	if ahead == 0 || behind == 0 {
		t.Fatalf("%d chunks indexed ahead, %d by the writer: want both", ahead, behind)
	}
	got, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := VerifyDigests(want, got); diff != nil {
		t.Fatalf("index stage differs from live: %v", diff)
	}
}
