package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// ReaderFixture is a log under RunReaderConformance with the means to
// damage it the way a compaction or an erasure does.
type ReaderFixture struct {
	Log    Log
	Reader StreamReader
	// DeleteMsg removes the one message at seq (a gap).
	DeleteMsg func(ctx context.Context, seq uint64) error
	// PurgeBefore removes every message below seq (a moved first sequence).
	PurgeBefore func(ctx context.Context, seq uint64) error
}

// RunReaderConformance checks that a StreamReader reads the whole log in
// order, follows it, and tolerates a moved first sequence and gaps.
// newFixture returns an empty log whose messages may be deleted; it is
// called once per subtest.
func RunReaderConformance(t *testing.T, newFixture func(t *testing.T) ReaderFixture) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, f ReaderFixture)
	}{
		{"BoundsEmpty", confBoundsEmpty},
		{"ReadAllInOrder", confReadAll},
		{"ReadFollowsAppends", confReadFollows},
		{"ReadMovedStart", confReadMovedStart},
		{"ReadGaps", confReadGaps},
		{"ReadOneSubject", confReadOneSubject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tc.run(t, ctx, newFixture(t))
		})
	}
}

// confFill appends n records cycling over three subjects: record i (from
// 1) is at sequence i. It returns the subject of each sequence (index 0
// unused).
func confFill(t *testing.T, ctx context.Context, l Log, n int) []string {
	t.Helper()
	subjects := []string{SessionSubject("a"), AgentSubject("b"), ScopeSubject("project", "c")}
	last := map[string]uint64{}
	out := []string{""}
	for i := 1; i <= n; i++ {
		s := subjects[i%len(subjects)]
		res := confAppend(t, ctx, l, s, last[s], fmt.Sprintf("m-%d", i), confData(s, i))
		if res.Seq != uint64(i) {
			t.Fatalf("record %d stored at sequence %d", i, res.Seq)
		}
		last[s] = res.Seq
		out = append(out, s)
	}
	return out
}

func confBounds(t *testing.T, ctx context.Context, r StreamReader) Bounds {
	t.Helper()
	b, err := r.Bounds(ctx)
	if err != nil {
		t.Fatalf("Bounds: %v", err)
	}
	return b
}

// confReadSeqs reads from from with stop (0: up to the bounds' last,
// bounded) and returns the sequences, checking each record's subject and data.
func confReadSeqs(t *testing.T, ctx context.Context, r StreamReader, subjects []string, from, stop uint64) []uint64 {
	t.Helper()
	if stop == 0 {
		stop = confBounds(t, ctx, r).Last
	}
	c, err := r.Read(ctx, from, WithStop(stop))
	if err != nil {
		t.Fatalf("Read(%d, stop %d): %v", from, stop, err)
	}
	defer c.Close()
	var seqs []uint64
	for {
		rec, err := c.Next(ctx)
		if errors.Is(err, ErrEndOfRead) {
			return seqs
		}
		if err != nil {
			t.Fatalf("Read(%d, stop %d): Next after %v: %v", from, stop, seqs, err)
		}
		if n := len(seqs); n > 0 && rec.Seq <= seqs[n-1] {
			t.Fatalf("Read(%d): sequence %d after %d", from, rec.Seq, seqs[n-1])
		}
		if rec.Seq < from || rec.Seq > stop {
			t.Fatalf("Read(%d, stop %d): sequence %d", from, stop, rec.Seq)
		}
		if subj := subjects[rec.Seq]; rec.Subject != subj || !bytes.Equal(rec.Data, confData(subj, int(rec.Seq))) || rec.Time.IsZero() {
			t.Fatalf("record %d = {%s %q %v}, want {%s %q}", rec.Seq, rec.Subject, rec.Data, rec.Time, subj, confData(subj, int(rec.Seq)))
		}
		seqs = append(seqs, rec.Seq)
	}
}

func seqsFrom(a, b uint64, skip ...uint64) []uint64 {
	var out []uint64
	for s := a; s <= b; s++ {
		if !slices.Contains(skip, s) {
			out = append(out, s)
		}
	}
	return out
}

func confWantSeqs(t *testing.T, what string, got, want []uint64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: sequences %v, want %v", what, got, want)
	}
}

func confBoundsEmpty(t *testing.T, ctx context.Context, f ReaderFixture) {
	if b := confBounds(t, ctx, f.Reader); b.Last != 0 || b.Msgs != 0 || b.Missing() != 0 {
		t.Fatalf("Bounds of an empty log = %+v", b)
	}
	// A bounded read waits for sequences not written yet.
	c, err := f.Reader.Read(ctx, 0, WithStop(5))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if r, err := c.Next(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bounded Next on an empty log = %d, %v; want the context's deadline", r.Seq, err)
	}
}

func confReadAll(t *testing.T, ctx context.Context, f ReaderFixture) {
	subjects := confFill(t, ctx, f.Log, 12)
	if b := confBounds(t, ctx, f.Reader); b != (Bounds{First: 1, Last: 12, Msgs: 12}) {
		t.Fatalf("Bounds = %+v, want first 1, last 12, 12 messages", b)
	}
	confWantSeqs(t, "from 0", confReadSeqs(t, ctx, f.Reader, subjects, 0, 0), seqsFrom(1, 12))
	confWantSeqs(t, "from 1", confReadSeqs(t, ctx, f.Reader, subjects, 1, 0), seqsFrom(1, 12))
	confWantSeqs(t, "from 5 to 9", confReadSeqs(t, ctx, f.Reader, subjects, 5, 9), seqsFrom(5, 9))
	confWantSeqs(t, "from 12", confReadSeqs(t, ctx, f.Reader, subjects, 12, 0), []uint64{12})
}

func confReadFollows(t *testing.T, ctx context.Context, f ReaderFixture) {
	subjects := confFill(t, ctx, f.Log, 3)
	c, err := f.Reader.Read(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for want := uint64(2); want <= 3; want++ {
		if r, err := c.Next(ctx); err != nil || r.Seq != want || r.Subject != subjects[want] {
			t.Fatalf("Next = %d %s, %v; want %d", r.Seq, r.Subject, err, want)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Next(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next at the end = %v, want the context's deadline", err)
	}
	s := SessionSubject("late")
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = f.Log.Append(context.Background(), s, 0, "late", confData(s, 4))
	}()
	r, err := c.Next(ctx)
	if err != nil || r.Seq != 4 || r.Subject != s || !bytes.Equal(r.Data, confData(s, 4)) {
		t.Fatalf("Next after an append = {%d %s %q}, %v; want 4 %s", r.Seq, r.Subject, r.Data, err, s)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Next(ctx); done <- err }()
	time.Sleep(50 * time.Millisecond)
	c.Close()
	c.Close() // idempotent
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Next after Close returned a record")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a waiting Next")
	}
}

func confReadMovedStart(t *testing.T, ctx context.Context, f ReaderFixture) {
	subjects := confFill(t, ctx, f.Log, 10)
	if err := f.PurgeBefore(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if b := confBounds(t, ctx, f.Reader); b.First != 5 || b.Last != 10 || b.Msgs != 6 || b.Missing() != 0 {
		t.Fatalf("Bounds after a purge below 5 = %+v", b)
	}
	confWantSeqs(t, "from 0", confReadSeqs(t, ctx, f.Reader, subjects, 0, 0), seqsFrom(5, 10))
	confWantSeqs(t, "from 3", confReadSeqs(t, ctx, f.Reader, subjects, 3, 0), seqsFrom(5, 10))
	confWantSeqs(t, "1 to 4, all purged", confReadSeqs(t, ctx, f.Reader, subjects, 1, 4), nil)
	// An unbounded read from before the start follows on.
	c, err := f.Reader.Read(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Next(ctx); err != nil || r.Seq != 5 {
		t.Fatalf("unbounded read from 1: %d, %v; want 5", r.Seq, err)
	}
	// Everything purged: the log is empty, its last sequence kept.
	if err := f.PurgeBefore(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if b := confBounds(t, ctx, f.Reader); b.First != 11 || b.Last != 10 || b.Msgs != 0 {
		t.Fatalf("Bounds after purging all = %+v", b)
	}
	confWantSeqs(t, "all purged", confReadSeqs(t, ctx, f.Reader, subjects, 0, 10), nil)
}

func confReadGaps(t *testing.T, ctx context.Context, f ReaderFixture) {
	subjects := confFill(t, ctx, f.Log, 10)
	for _, s := range []uint64{3, 4, 7, 10} {
		if err := f.DeleteMsg(ctx, s); err != nil {
			t.Fatalf("delete %d: %v", s, err)
		}
	}
	b := confBounds(t, ctx, f.Reader)
	if b.First != 1 || b.Last != 10 || b.Msgs != 6 {
		t.Fatalf("Bounds after deleting 3, 4, 7, 10 = %+v", b)
	}
	if gl, ok := f.Reader.(GapLister); ok {
		// The last sequence's message is gone: JetStream counts the hole up
		// to its last sequence, 10 included.
		got, ok, err := gl.MissingSeqs(ctx, 10)
		if err != nil || !ok || !slices.Equal(got, []uint64{3, 4, 7}) && !slices.Equal(got, []uint64{3, 4, 7, 10}) {
			t.Fatalf("MissingSeqs = %v, %v, %v; want 3, 4, 7", got, ok, err)
		}
		if _, ok, err := gl.MissingSeqs(ctx, 1); ok || err != nil {
			t.Fatalf("MissingSeqs(limit 1) = %v, %v; want not listed", ok, err)
		}
	}
	all := seqsFrom(1, 9, 3, 4, 7)
	confWantSeqs(t, "from 0", confReadSeqs(t, ctx, f.Reader, subjects, 0, 0), all)
	confWantSeqs(t, "from 3", confReadSeqs(t, ctx, f.Reader, subjects, 3, 0), seqsFrom(5, 9, 7))
	confWantSeqs(t, "7 alone", confReadSeqs(t, ctx, f.Reader, subjects, 7, 7), nil)
	// The last message is deleted: a bounded read to the last sequence ends
	// after the one before, without waiting for it.
	confWantSeqs(t, "to the deleted last", confReadSeqs(t, ctx, f.Reader, subjects, 8, 10), []uint64{8, 9})
	// Load of one aggregate skips its deleted messages too.
	for _, subj := range []string{subjects[3], subjects[4]} {
		recs, _ := confLoadAll(t, ctx, f.Log, subj, 0)
		var got []uint64
		for _, r := range recs {
			got = append(got, r.Seq)
		}
		var want []uint64
		for _, s := range all {
			if subjects[s] == subj {
				want = append(want, s)
			}
		}
		confWantSeqs(t, "Load "+subj, got, want)
	}
}

// confReadOneSubject: WithSubject reads one aggregate's held records only,
// from before a moved start and across gaps, ends a bounded read when the
// subject holds nothing more up to the stop, and follows the subject's
// appends (not the others').
func confReadOneSubject(t *testing.T, ctx context.Context, f ReaderFixture) {
	subjects := confFill(t, ctx, f.Log, 12) // a at 3, 6, 9, 12
	a := subjects[3]
	if err := f.PurgeBefore(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := f.DeleteMsg(ctx, 9); err != nil {
		t.Fatal(err)
	}
	read := func(from, stop uint64) []uint64 {
		t.Helper()
		c, err := f.Reader.Read(ctx, from, WithSubjects(a), WithStop(stop))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var seqs []uint64
		for {
			rec, err := c.Next(ctx)
			if errors.Is(err, ErrEndOfRead) {
				return seqs
			}
			if err != nil {
				t.Fatalf("Read(%d, %s, stop %d): after %v: %v", from, a, stop, seqs, err)
			}
			if rec.Subject != a || !bytes.Equal(rec.Data, confData(a, int(rec.Seq))) {
				t.Fatalf("record %d on %s, want %s", rec.Seq, rec.Subject, a)
			}
			seqs = append(seqs, rec.Seq)
		}
	}
	confWantSeqs(t, a+" from 0", read(0, 12), []uint64{6, 12})
	confWantSeqs(t, a+" from 7 to 11", read(7, 11), nil)
	confWantSeqs(t, a+" from 1 to 5", read(1, 5), nil)
	// Unbounded: an append on another subject is skipped, the next one on a
	// is read.
	c, err := f.Reader.Read(ctx, 13, WithSubjects(a))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	confAppend(t, ctx, f.Log, subjects[4], 10, "other", confData(subjects[4], 13))
	confAppend(t, ctx, f.Log, a, 12, "mine", confData(a, 14))
	if r, err := c.Next(ctx); err != nil || r.Seq != 14 || r.Subject != a {
		t.Fatalf("unbounded read of %s: %d on %s, %v; want 14", a, r.Seq, r.Subject, err)
	}
}
