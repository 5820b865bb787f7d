package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// RunLogConformance checks that a Log implementation has the semantics the
// actors rely on. newLog returns an empty log; it is called once per subtest
// and should register its cleanup with t.Cleanup.
func RunLogConformance(t *testing.T, newLog func(t *testing.T) Log) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, l Log)
	}{
		{"AppendToEmpty", confAppendToEmpty},
		{"Conflict", confConflict},
		{"DedupeByMsgID", confDedupe},
		{"LoadTail", confLoadTail},
		{"LoadEmpty", confLoadEmpty},
		{"LoadStopsOnCallbackError", confLoadCallbackError},
		{"SubjectsIsolated", confIsolated},
		{"ManyAggregatesInterleaved", confManyAggregates},
		{"ConcurrentAppendersOneWins", confConcurrent},
		{"InvalidSubject", confInvalidSubject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tc.run(t, ctx, newLog(t))
		})
	}
}

// confData is a payload naming its subject and index, so tests can check
// that what they load is what they appended.
func confData(subject string, i int) []byte { return fmt.Appendf(nil, "%s#%d", subject, i) }

func confAppend(t *testing.T, ctx context.Context, l Log, subject string, expected uint64, msgID string, data []byte) AppendResult {
	t.Helper()
	res, err := l.Append(ctx, subject, expected, msgID, data)
	if err != nil {
		t.Fatalf("Append(%s, expected %d, %s): %v", subject, expected, msgID, err)
	}
	if res.Duplicate {
		t.Fatalf("Append(%s, expected %d, %s): unexpected duplicate", subject, expected, msgID)
	}
	if res.Seq == 0 {
		t.Fatalf("Append(%s): sequence 0", subject)
	}
	return res
}

func confLoadAll(t *testing.T, ctx context.Context, l Log, subject string, after uint64) ([]Record, uint64) {
	t.Helper()
	var recs []Record
	last, err := l.Load(ctx, subject, after, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Load(%s, after %d): %v", subject, after, err)
	}
	return recs, last
}

func confLastSeq(t *testing.T, ctx context.Context, l Log, subject string) uint64 {
	t.Helper()
	seq, err := l.LastSeq(ctx, subject)
	if err != nil {
		t.Fatalf("LastSeq(%s): %v", subject, err)
	}
	return seq
}

func confAppendToEmpty(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("s1")
	if got := confLastSeq(t, ctx, l, subj); got != 0 {
		t.Fatalf("LastSeq of empty subject = %d, want 0", got)
	}
	r1 := confAppend(t, ctx, l, subj, 0, "c1", confData(subj, 1))
	if got := confLastSeq(t, ctx, l, subj); got != r1.Seq {
		t.Fatalf("LastSeq = %d, want %d", got, r1.Seq)
	}
	r2 := confAppend(t, ctx, l, subj, r1.Seq, "c2", confData(subj, 2))
	if r2.Seq <= r1.Seq {
		t.Fatalf("sequences not increasing: %d then %d", r1.Seq, r2.Seq)
	}
	recs, last := confLoadAll(t, ctx, l, subj, 0)
	if len(recs) != 2 || last != r2.Seq {
		t.Fatalf("Load = %d records, last %d; want 2, %d", len(recs), last, r2.Seq)
	}
}

func confConflict(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("s1")
	r1 := confAppend(t, ctx, l, subj, 0, "c1", confData(subj, 1))
	for _, expected := range []uint64{0, r1.Seq + 1, r1.Seq + 100} {
		_, err := l.Append(ctx, subj, expected, fmt.Sprintf("other-%d", expected), []byte("loser"))
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("Append with expected %d (last %d): err = %v, want ErrConflict", expected, r1.Seq, err)
		}
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Subject != subj || ce.Expected != expected {
			t.Fatalf("conflict error = %#v, want ConflictError{%s, %d}", err, subj, expected)
		}
	}
	if got := confLastSeq(t, ctx, l, subj); got != r1.Seq {
		t.Fatalf("LastSeq after conflicts = %d, want %d", got, r1.Seq)
	}
	recs, _ := confLoadAll(t, ctx, l, subj, 0)
	if len(recs) != 1 || !bytes.Equal(recs[0].Data, confData(subj, 1)) {
		t.Fatalf("conflicting appends stored something: %d records", len(recs))
	}
}

func confDedupe(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("s1")
	r1 := confAppend(t, ctx, l, subj, 0, "cmd-1", confData(subj, 1))
	// A retry with the same arguments (the first outcome was unknown).
	for range 2 {
		res, err := l.Append(ctx, subj, 0, "cmd-1", confData(subj, 1))
		if err != nil {
			t.Fatalf("retry with same msgID and expectation: %v", err)
		}
		if !res.Duplicate || res.Seq != r1.Seq {
			t.Fatalf("retry = %+v, want duplicate of seq %d", res, r1.Seq)
		}
	}
	// Same msgID with an expectation that holds: still the original.
	res, err := l.Append(ctx, subj, r1.Seq, "cmd-1", confData(subj, 1))
	if err != nil || !res.Duplicate || res.Seq != r1.Seq {
		t.Fatalf("same msgID, current expectation = %+v, %v; want duplicate of %d", res, err, r1.Seq)
	}
	r2 := confAppend(t, ctx, l, subj, r1.Seq, "cmd-2", confData(subj, 2))
	// Late retries with the original arguments are duplicates, never stored.
	if res, err := l.Append(ctx, subj, r1.Seq, "cmd-2", confData(subj, 2)); err != nil || !res.Duplicate || res.Seq != r2.Seq {
		t.Fatalf("retry of cmd-2 = %+v, %v; want duplicate of %d", res, err, r2.Seq)
	}
	if res, err := l.Append(ctx, subj, 0, "cmd-1", confData(subj, 1)); err != nil || !res.Duplicate || res.Seq != r1.Seq {
		t.Fatalf("late retry of cmd-1 = %+v, %v; want duplicate of %d", res, err, r1.Seq)
	}
	// A new command with a stale expectation is a conflict, not a duplicate.
	if _, err := l.Append(ctx, subj, r1.Seq, "cmd-3", confData(subj, 3)); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale new command = %v, want ErrConflict", err)
	}
	recs, last := confLoadAll(t, ctx, l, subj, 0)
	if len(recs) != 2 || last != r2.Seq {
		t.Fatalf("after duplicates: %d records (last %d), want 2 (last %d)", len(recs), last, r2.Seq)
	}
}

func confLoadTail(t *testing.T, ctx context.Context, l Log) {
	a, b := SessionSubject("a"), AgentSubject("b")
	var seqsA []uint64
	var lastA, lastB uint64
	for i := range 20 {
		lastA = confAppend(t, ctx, l, a, lastA, fmt.Sprintf("a-%d", i), confData(a, i)).Seq
		seqsA = append(seqsA, lastA)
		if i%3 == 0 { // interleave another subject: sequences of a are not contiguous
			lastB = confAppend(t, ctx, l, b, lastB, fmt.Sprintf("b-%d", i), confData(b, i)).Seq
		}
	}
	for _, from := range []int{-1, 0, 4, 18, 19} {
		after := uint64(0)
		if from >= 0 {
			after = seqsA[from]
		}
		recs, last := confLoadAll(t, ctx, l, a, after)
		want := seqsA[from+1:]
		if len(recs) != len(want) {
			t.Fatalf("Load after %d: %d records, want %d", after, len(recs), len(want))
		}
		for i, r := range recs {
			idx := from + 1 + i
			if r.Seq != want[i] || r.Subject != a || !bytes.Equal(r.Data, confData(a, idx)) {
				t.Fatalf("Load after %d: record %d = {%s %d %q}, want {%s %d %q}", after, i, r.Subject, r.Seq, r.Data, a, want[i], confData(a, idx))
			}
			if r.Time.IsZero() {
				t.Fatalf("record %d without time", r.Seq)
			}
		}
		wantLast := after
		if len(want) > 0 {
			wantLast = want[len(want)-1]
		}
		if last != wantLast {
			t.Fatalf("Load after %d returned %d, want %d", after, last, wantLast)
		}
	}
}

func confLoadEmpty(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("empty")
	for _, after := range []uint64{0, 7} {
		last, err := l.Load(ctx, subj, after, func(r Record) error {
			t.Fatalf("callback called for empty subject: %+v", r)
			return nil
		})
		if err != nil || last != after {
			t.Fatalf("Load(empty, %d) = %d, %v; want %d, nil", after, last, err, after)
		}
	}
}

func confLoadCallbackError(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("s1")
	var seqs []uint64
	var last uint64
	for i := range 5 {
		last = confAppend(t, ctx, l, subj, last, fmt.Sprintf("c%d", i), confData(subj, i)).Seq
		seqs = append(seqs, last)
	}
	stop := errors.New("stop")
	calls := 0
	got, err := l.Load(ctx, subj, 0, func(r Record) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("Load = %v after %d calls, want the callback's error after 3", err, calls)
	}
	if got != seqs[1] {
		t.Fatalf("Load returned %d with the error, want the last handled sequence %d", got, seqs[1])
	}
}

func confIsolated(t *testing.T, ctx context.Context, l Log) {
	subjects := []string{SessionSubject("x"), SessionSubject("y"), AgentSubject("x"), ScopeSubject("workflow", "x")}
	for _, s := range subjects {
		confAppend(t, ctx, l, s, 0, "first-"+s, confData(s, 0))
	}
	for _, s := range subjects {
		recs, _ := confLoadAll(t, ctx, l, s, 0)
		if len(recs) != 1 || recs[0].Subject != s || !bytes.Equal(recs[0].Data, confData(s, 0)) {
			t.Fatalf("subject %s: %d records, first %+v", s, len(recs), recs)
		}
	}
	// Subjects sharing a prefix are distinct aggregates.
	if got := confLastSeq(t, ctx, l, SessionSubject("xx")); got != 0 {
		t.Fatalf("LastSeq(session.xx) = %d, want 0", got)
	}
}

// confManyAggregates interleaves the appends of many aggregates (spread
// over every partition of a partitioned log): each keeps its own order,
// its own expectations and its own sequences.
func confManyAggregates(t *testing.T, ctx context.Context, l Log) {
	const aggregates, rounds = 24, 3
	subjects := make([]string, 0, aggregates)
	for i := range aggregates {
		switch i % 3 {
		case 0:
			subjects = append(subjects, SessionSubject(fmt.Sprintf("s%d", i)))
		case 1:
			subjects = append(subjects, AgentSubject(fmt.Sprintf("a%d", i)))
		default:
			subjects = append(subjects, ScopeSubject("user", fmt.Sprintf("u%d", i)))
		}
	}
	seqs := map[string][]uint64{}
	for r := range rounds {
		for _, s := range subjects {
			prev := uint64(0)
			if n := len(seqs[s]); n > 0 {
				prev = seqs[s][n-1]
			}
			res := confAppend(t, ctx, l, s, prev, fmt.Sprintf("%s-%d", s, r), confData(s, r))
			if res.Seq <= prev {
				t.Fatalf("%s round %d: sequence %d after %d", s, r, res.Seq, prev)
			}
			seqs[s] = append(seqs[s], res.Seq)
		}
	}
	for _, s := range subjects {
		recs, last := confLoadAll(t, ctx, l, s, 0)
		if len(recs) != rounds || last != seqs[s][rounds-1] {
			t.Fatalf("%s: %d records, last %d; want %d, last %d", s, len(recs), last, rounds, seqs[s][rounds-1])
		}
		for r, rec := range recs {
			if rec.Subject != s || rec.Seq != seqs[s][r] || !bytes.Equal(rec.Data, confData(s, r)) {
				t.Fatalf("%s record %d: %s seq %d %q; want seq %d %q", s, r, rec.Subject, rec.Seq, rec.Data, seqs[s][r], confData(s, r))
			}
		}
		if got := confLastSeq(t, ctx, l, s); got != seqs[s][rounds-1] {
			t.Fatalf("LastSeq(%s) = %d, want %d", s, got, seqs[s][rounds-1])
		}
		tail, _ := confLoadAll(t, ctx, l, s, seqs[s][0])
		if len(tail) != rounds-1 || tail[0].Seq != seqs[s][1] {
			t.Fatalf("%s after %d: %d records", s, seqs[s][0], len(tail))
		}
		// An append expecting an older sequence of this aggregate conflicts.
		if _, err := l.Append(ctx, s, seqs[s][0], "stale-"+s, []byte("x")); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale append to %s: %v, want ErrConflict", s, err)
		}
	}
}

func confConcurrent(t *testing.T, ctx context.Context, l Log) {
	subj := SessionSubject("hot")
	base := confAppend(t, ctx, l, subj, 0, "base", confData(subj, 0)).Seq
	const writers = 16
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		wins      []AppendResult
		conflicts int
		others    []error
	)
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			res, err := l.Append(ctx, subj, base, fmt.Sprintf("w-%d", w), confData(subj, w+1))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, res)
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				others = append(others, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(others) > 0 {
		t.Fatalf("unexpected errors: %v", others)
	}
	if len(wins) != 1 || conflicts != writers-1 {
		t.Fatalf("%d winners, %d conflicts; want 1 and %d", len(wins), conflicts, writers-1)
	}
	recs, last := confLoadAll(t, ctx, l, subj, base)
	if len(recs) != 1 || recs[0].Seq != wins[0].Seq || last != wins[0].Seq {
		t.Fatalf("stored after race: %d records, last %d; winner %+v", len(recs), last, wins[0])
	}
}

func confInvalidSubject(t *testing.T, ctx context.Context, l Log) {
	// mem.ev.p0.session.a is how a log in partitions stores session a: a
	// stored subject is no logical one.
	for _, s := range []string{"", "mem.ev.session", "mem.ev.session.a.b", "mem.ev.session.*", "mem.ev.>", "other.session.a", "mem.ev.p0.session.a"} {
		if _, err := l.Append(ctx, s, 0, "x", []byte("x")); !errors.Is(err, ErrInvalidID) {
			t.Fatalf("Append(%q) = %v, want ErrInvalidID", s, err)
		}
	}
}
