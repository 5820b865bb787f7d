package projections

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestRebuildChunksMatchLive: a Rebuild cut into many chunks (postings of
// later chunks inserted among those of earlier ones), a Rebuild in one
// chunk and the live path (ApplyBatch, small batches) give the same file.
func TestRebuildChunksMatchLive(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	rng := rand.New(rand.NewPCG(7, 7))
	sessions := []string{"s0", "s1", "s2", "s3", "s4"}
	for i, sid := range sessions {
		l.create(sid, []string{"alice", "bob", ""}[i%3], "agent")
	}
	for i := 0; i < 400; i++ {
		sid := sessions[rng.IntN(len(sessions))]
		switch rng.IntN(20) {
		case 0:
			l.add(sid, &memoryv1.SessionStatusChanged{To: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE})
		case 1:
			l.appendMsgs(sid, "", "!!!") // no terms: not documents
		default:
			texts := make([]string, 1+rng.IntN(3))
			for j := range texts {
				texts[j] = benchText(rng)
			}
			l.appendMsgs(sid, texts...)
		}
	}
	last := publish(t, log, l.recs)
	if last != l.seq {
		t.Fatalf("published up to %d, log builder at %d", last, l.seq)
	}

	live := openTestStore(t)
	for i := 0; i < len(l.recs); i += 7 {
		mustApply(t, live, l.recs[i:min(i+7, len(l.recs))])
	}
	want, err := live.Digest()
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, chunk := range []uint64{37, rebuildChunkRecords} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			defer func(old uint64) { rebuildChunkRecords = old }(rebuildChunkRecords)
			rebuildChunkRecords = chunk
			path := filepath.Join(t.TempDir(), "p.db")
			stats, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Events != last || stats.LastSeq != last {
				t.Fatalf("stats = %+v", stats)
			}
			if chunk < last && stats.Batches < 2 {
				t.Fatalf("%d transactions, want several", stats.Batches)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := s.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if diff := VerifyDigests(want, got); diff != nil {
				t.Fatalf("rebuilt differs from live: %v", diff)
			}
			checkInlineRule(t, s)
		})
	}
}

// TestRebuildCanceled: a Rebuild whose context ends after its first
// transaction — the index stage then runs ahead of the writer, up to a
// queue of a few records' bytes — commits no further transaction, returns
// the context's error (not a short read, nor success with the records
// queued before the end applied), renames nothing over the path and leaves
// no file aside; every stage's goroutine ends (goleak, TestMain).
func TestRebuildCanceled(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	rng := rand.New(rand.NewPCG(8, 8))
	l.create("s", "u", "ag")
	for range 600 {
		l.appendMsgs("s", benchText(rng), benchText(rng))
	}
	publish(t, log, l.recs)
	defer func(old uint64) { rebuildChunkRecords = old }(rebuildChunkRecords)
	rebuildChunkRecords = 20
	defer func(old int64) { rebuildQueueBytes = old }(rebuildQueueBytes)
	rebuildQueueBytes = 2048

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	path := filepath.Join(t.TempDir(), "p.db")
	var calls int
	_, err := Rebuild(rctx, js, events.StreamName, path, testCodec, func(applied, total uint64) {
		calls++
		stop()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled rebuild: %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Fatalf("%d transactions committed, want the one before the cancel", calls)
	}
	for _, p := range []string{path, path + ".rebuild"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after a canceled rebuild: %v", p, err)
		}
	}
}
