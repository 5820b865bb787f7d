package projections

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// compactedLog is interleavedLog over sessions x, a, b (33 records: x at
// sequences 1, 4, ..., 31) with session x purged away: the first sequence
// moved to 2 and x's sequences are gaps. With baseline > 0 it is recorded
// as the compaction baseline.
func compactedLog(t *testing.T, baseline uint64) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, s, last := interleavedLog(t, []string{"x", "a", "b"}, 33)
	if last != 33 {
		t.Fatalf("last %d", last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := purgeSession("x")(ctx, js, s); err != nil {
		t.Fatal(err)
	}
	if baseline > 0 {
		l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.MarkCompacted(ctx, baseline); err != nil {
			t.Fatal(err)
		}
	}
	return js, s
}

// TestRebuildCompactedLog: a log whose start moved and which has gaps is
// rebuilt when its compaction baseline says the missing sequences were
// removed on purpose; the projection is checkpointed at the last sequence.
func TestRebuildCompactedLog(t *testing.T) {
	js, _ := compactedLog(t, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatalf("Rebuild of a compacted log: %v", err)
	}
	if st.LastSeq != 33 || st.Events != 33-11 {
		t.Fatalf("Rebuild = %+v, want last 33 and 22 records", st)
	}
	// The same as a rebuild that reads the kept records one by one.
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.AppliedSeq() != 33 {
		t.Fatalf("checkpoint %d, want 33", s.AppliedSeq())
	}
}

// TestRebuildCompactedLogRefusals: a baseline excuses only what is below
// it. A gap at or after it, or a point in time before it, is refused.
func TestRebuildCompactedLogRefusals(t *testing.T) {
	t.Run("gap after the baseline", func(t *testing.T) {
		js, s := compactedLog(t, 32)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Session a holds 2, 5, ..., 32: purging it removes 32 too.
		if err := purgeSession("a")(ctx, js, s); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "p.db")
		_, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second))
		if !errors.Is(err, ErrLogGap) || !strings.Contains(err.Error(), "after its compaction baseline 32: sequence 32 missing") {
			t.Fatalf("Rebuild = %v, want ErrLogGap naming sequence 32", err)
		}
		if fileExists(path) || fileExists(path+".rebuild") {
			t.Error("a refused Rebuild left a file")
		}
	})
	t.Run("up to a point before the baseline", func(t *testing.T) {
		js, _ := compactedLog(t, 32)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		path := filepath.Join(t.TempDir(), "p.db")
		_, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithUpTo(20), WithIdleTimeout(time.Second))
		if !errors.Is(err, ErrLogTruncated) {
			t.Fatalf("Rebuild up to 20 = %v, want ErrLogTruncated", err)
		}
	})
	t.Run("no baseline", func(t *testing.T) {
		js, _ := compactedLog(t, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := Rebuild(ctx, js, events.StreamName, filepath.Join(t.TempDir(), "p.db"), testCodec, nil, WithIdleTimeout(time.Second))
		want := "projections: stream MEM is truncated: sequence 1 purged (first 2, last 33)"
		if !errors.Is(err, ErrLogTruncated) || err.Error() != want {
			t.Fatalf("Rebuild = %v, want %q", err, want)
		}
	})
}

// TestRebuildLogMemLog: RebuildLog reads any events.StreamReader: the
// in-memory log, compacted, gives the same read model as the JetStream one.
func TestRebuildLogMemLog(t *testing.T) {
	js, _ := compactedLog(t, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Copy the JetStream log into a MemLog, record by record (sequences
	// kept: the MemLog gets a filler record for each missing one, deleted
	// afterwards).
	jl := readerOf(t, js)
	ml := events.NewMemLog()
	cur, err := jl.Read(ctx, 1, events.WithStop(33))
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	var fillers []uint64
	for seq := uint64(1); ; {
		r, err := cur.Next(ctx)
		if errors.Is(err, events.ErrEndOfRead) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for ; seq < r.Seq; seq++ {
			f := events.SessionSubject("filler")
			res, err := ml.Append(ctx, f, last[f], "", nil)
			if err != nil {
				t.Fatal(err)
			}
			last[f] = res.Seq
			fillers = append(fillers, res.Seq)
		}
		res, err := ml.Append(ctx, r.Subject, last[r.Subject], "", r.Data)
		if err != nil || res.Seq != r.Seq {
			t.Fatalf("copy of %d: %d, %v", r.Seq, res.Seq, err)
		}
		last[r.Subject] = res.Seq
		seq++
	}
	cur.Close()
	for _, s := range fillers {
		if err := ml.DeleteMsg(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := ml.MarkCompacted(ctx, 32); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pj, pm := filepath.Join(dir, "js.db"), filepath.Join(dir, "mem.db")
	if _, err := Rebuild(ctx, js, events.StreamName, pj, testCodec, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := RebuildLog(ctx, ml, events.StreamName, pm, testCodec, nil); err != nil {
		t.Fatal(err)
	}
	dj, dm := digestOf(t, pj), digestOf(t, pm)
	if diff := VerifyDigests(dj, dm); diff != nil {
		t.Fatalf("JetStream and MemLog rebuilds differ: %v", diff)
	}
}

func digestOf(t *testing.T, path string) map[string]string {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
