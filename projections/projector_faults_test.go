package projections

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
)

// capFile makes the store unable to grow past the pages it uses now (on:
// false lifts the cap), as a full disk or a quota would: bbolt's own
// MaxSize check fails the commit that needs more pages with
// ErrMaxSizeReached. The cap is the size in use (tx.Size), not the file's:
// with the large initial mmap (openStore) bbolt grows the file 16 MB ahead.
// It is set inside a write transaction, so the projector's commits see it in
// order.
func capFile(t *testing.T, s *Store, on bool) {
	t.Helper()
	if err := s.db.Update(func(tx *bolt.Tx) error {
		s.maxSize = 0
		if on {
			s.maxSize = int(tx.Size())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestProjectorRetriesWriteErrors: a projection file that cannot grow (a
// real bbolt write failure, the fault a full disk gives the projector)
// does not stop the projector: it reports the problem, counts and logs its
// retries, and once the file may grow again it applies everything, exactly
// once (the same digest as a rebuild of the log), by itself within
// maxWriteRetry, or at once on Wake.
func TestProjectorRetriesWriteErrors(t *testing.T) {
	for _, wake := range []bool{false, true} {
		name := "backoff"
		if wake {
			name = "wake"
		}
		t.Run(name, func(t *testing.T) {
			js, log := testJS(t)
			store := openTestStore(t)
			p, err := NewProjector(Config{}, js, store, testCodec, nil)
			if err != nil {
				t.Fatal(err)
			}
			stop := runProjector(t, p)
			l := newLogBuilder(t)
			l.create("s1", "u1", "")
			l.appendMsgs("s1", "before the disk filled")
			first := publish(t, log, l.recs)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.WaitFor(ctx, first); err != nil {
				t.Fatal(err)
			}
			capFile(t, store, true)

			n := len(l.recs)
			big := strings.Repeat("a full disk refuses this write ", 4000) // ~120 KB: the file must grow
			l.create("s2", "u1", "")
			for range 8 {
				l.appendMsgs("s2", big)
			}
			last := publish(t, log, l.recs[n:])
			deadline := time.Now().Add(20 * time.Second)
			for p.WriteRetries() < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if p.WriteRetries() < 2 || !strings.Contains(p.Problem(), "cannot write the projection") {
				t.Fatalf("while the file cannot grow: retries %d, problem %q; want >= 2 retries and a write problem", p.WriteRetries(), p.Problem())
			}
			if got := p.AppliedSeq(); got >= last {
				t.Fatalf("applied %d of %d while the file could not grow", got, last)
			}

			capFile(t, store, false)
			freed := time.Now()
			if wake {
				p.Wake()
			}
			if err := p.WaitFor(ctx, last); err != nil {
				t.Fatalf("projector did not resume: %v (problem %q)", err, p.Problem())
			}
			took := time.Since(freed)
			t.Logf("resumed %s after the file could grow again (wake=%v, %d write retries)", took.Round(time.Millisecond), wake, p.WriteRetries())
			// Generous: the machine may be busy; the timing itself is logged.
			bound := maxWriteRetry + 5*time.Second
			if took > bound {
				t.Errorf("resumed after %s, want within %s", took, bound)
			}
			if p.Problem() != "" {
				t.Errorf("problem after resuming: %q", p.Problem())
			}
			if err := stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			assertSameAsRebuild(t, js, store)
		})
	}
}

// assertSameAsRebuild compares the store's digest with that of a
// projection rebuilt from the whole log: every record applied once.
func assertSameAsRebuild(t *testing.T, js jetstream.JetStream, store *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "rebuilt.db")
	if _, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	want, err := rebuilt.Digest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d := VerifyDigests(got, want); len(d) > 0 || store.AppliedSeq() != rebuilt.AppliedSeq() {
		t.Fatalf("projection after write faults differs from a rebuild (applied %d vs %d): %v", store.AppliedSeq(), rebuilt.AppliedSeq(), d)
	}
}

func TestClassifyWrite(t *testing.T) {
	cause := errors.New("write /x: no space left on device")
	if err := classifyWrite(cause); !errors.Is(err, ErrStoreWrite) || !errors.Is(err, cause) {
		t.Fatalf("classifyWrite(io error) = %v", err)
	}
	ae := &ApplyError{Seq: 3, Err: errors.New("bad")}
	if err := classifyWrite(ae); errors.Is(err, ErrStoreWrite) {
		t.Fatalf("an ApplyError is not a write fault: %v", err)
	}
	if err := classifyWrite(ErrClosed); errors.Is(err, ErrStoreWrite) {
		t.Fatalf("a closed store is not a write fault: %v", err)
	}
}
