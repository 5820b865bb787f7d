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
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// compactedLog is interleavedLog over sessions x, a, b (33 records: x at
// sequences 1, 4, ..., 31) with session x purged away: the first sequence
// moved to 2 and x's sequences are gaps. With listed, a LogRemoval listing
// them follows (sequence 34), as an erase records it.
func compactedLog(t *testing.T, listed bool) (jetstream.JetStream, jetstream.Stream) {
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
	if listed {
		l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for seq := uint64(1); seq <= 31; seq += 3 {
			seqs = append(seqs, seq)
		}
		rm := &memoryv1.LogRemoval{Id: "rx", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:x",
			Subjects: []string{events.SessionSubject("x")}, Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{"session.x"}}
		if seq, err := events.AppendRemoval(ctx, l, testCodec, rm, time.Now()); err != nil || seq != 34 {
			t.Fatalf("record the removal: %d %v", seq, err)
		}
	}
	return js, s
}

// TestRebuildCompactedLog: a log whose start moved and which has gaps is
// rebuilt when its removal ledger says the missing sequences were removed
// on purpose; the projection is checkpointed at the last sequence.
func TestRebuildCompactedLog(t *testing.T) {
	js, _ := compactedLog(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatalf("Rebuild of a compacted log: %v", err)
	}
	if st.LastSeq != 34 || st.Events != 34-11 {
		t.Fatalf("Rebuild = %+v, want last 34 and 23 records", st)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.AppliedSeq() != 34 {
		t.Fatalf("checkpoint %d, want 34", s.AppliedSeq())
	}
}

// TestRebuildCompactedLogRefusals: the ledger excuses only what it lists.
func TestRebuildCompactedLogRefusals(t *testing.T) {
	t.Run("a purge the ledger does not list", func(t *testing.T) {
		js, s := compactedLog(t, true)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Session a holds 2, 5, ..., 32.
		if err := purgeSession("a")(ctx, js, s); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "p.db")
		_, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second))
		if !errors.Is(err, ErrLogTruncated) || !strings.Contains(err.Error(), "sequences 1..2 purged") && !strings.Contains(err.Error(), "sequence 2") {
			t.Fatalf("Rebuild = %v, want ErrLogTruncated naming sequence 2", err)
		}
		if fileExists(path) || fileExists(path+".rebuild") {
			t.Error("a refused Rebuild left a file")
		}
	})
	t.Run("no ledger", func(t *testing.T) {
		js, _ := compactedLog(t, false)
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
	js, _ := compactedLog(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Copy the JetStream log into a MemLog, record by record (sequences
	// kept: the MemLog gets a filler record for each missing one, deleted
	// afterwards).
	jl := readerOf(t, js)
	ml := events.NewMemLog()
	cur, err := jl.Read(ctx, 1, events.WithStop(34))
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
