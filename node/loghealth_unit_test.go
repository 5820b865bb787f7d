package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// unlistable is a log that cannot name its missing sequences (as a stream
// with more of them than the check asks for): the check compares counts.
type unlistable struct{ *events.MemLog }

func (unlistable) MissingSeqs(context.Context, int) ([]uint64, bool, error) { return nil, false, nil }

// healthRig is a log health check on an in-memory log, driven step by step.
type healthRig struct {
	t     *testing.T
	l     *events.MemLog
	h     *logHealth
	codec *events.Codec
	n     int // removals recorded
}

func newHealthRig(t *testing.T, listable bool) *healthRig {
	l := events.NewMemLog()
	var hl healthLog = l
	if !listable {
		hl = unlistable{l}
	}
	h := newLogHealth(hl, "MEM", nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	return &healthRig{t: t, l: l, h: h, codec: events.NewCodec()}
}

// append stores one message on subject and returns its sequence.
func (r *healthRig) append(subject string) uint64 {
	r.t.Helper()
	ctx := context.Background()
	last, err := r.l.LastSeq(ctx, subject)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := r.l.Append(ctx, subject, last, fmt.Sprintf("%s-%d", subject, last), []byte("x"))
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Seq
}

// remove records a removal of subject's messages in the ledger, then
// removes them, as erasure and compaction do.
func (r *healthRig) remove(subject string) {
	r.t.Helper()
	ctx := context.Background()
	seqs, err := events.SubjectSeqs(ctx, r.l, subject)
	if err != nil {
		r.t.Fatal(err)
	}
	r.n++
	rm := &memoryv1.LogRemoval{Id: fmt.Sprintf("rm%d", r.n), Subjects: []string{subject}, Removed: events.RemovalSpans(events.Spans(seqs))}
	at, err := events.AppendRemoval(ctx, r.l, r.codec, rm, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.l.RemoveSubject(ctx, subject, at); err != nil {
		r.t.Fatal(err)
	}
}

// want checks that the next observation reports a problem holding want
// ("": healthy).
func (r *healthRig) want(step, want string) {
	r.t.Helper()
	got := r.h.observe(context.Background())
	if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
		r.t.Fatalf("%s: observed %q, want %q", step, got, want)
	}
}

// TestLogHealthRemovals: removals the ledger lists are no fault, wherever
// they are in the stream; a message gone without one is, and stays
// reported; a message below the compaction baseline may be gone. Both with
// the missing sequences named and counted only.
func TestLogHealthRemovals(t *testing.T) {
	for _, listable := range []bool{true, false} {
		t.Run(fmt.Sprintf("listable=%v", listable), func(t *testing.T) {
			r := newHealthRig(t, listable)
			for i := range 12 {
				r.append(fmt.Sprintf("mem.ev.session.s%d", i%4))
			}
			r.want("a growing log", "")
			r.remove("mem.ev.session.s0") // the head
			r.want("after the head's removal", "")
			r.remove("mem.ev.session.s2") // the middle
			r.append("mem.ev.session.s1")
			r.want("after a removal in the middle", "")
			// A message gone behind the ledger's back.
			if err := r.l.DeleteMsg(6); err != nil {
				t.Fatal(err)
			}
			if listable {
				r.want("after a delete the ledger does not list", "lost 1 message the removal ledger does not list (sequence 6)")
			} else {
				r.want("after a delete the ledger does not list", "lost at least 1 message the removal ledger does not list")
			}
			r.remove("mem.ev.session.s3")
			r.want("after a later legitimate removal", "1 message the removal ledger does not list")
		})
	}
}

// TestLogHealthHead: a moved first sequence the ledger does not explain is
// a loss, even at the first look (a node started on a purged stream);
// below the compaction baseline it is not.
func TestLogHealthHead(t *testing.T) {
	r := newHealthRig(t, true)
	for i := range 6 {
		r.append(fmt.Sprintf("mem.ev.session.s%d", i%2))
	}
	if err := r.l.PurgeBefore(3); err != nil {
		t.Fatal(err)
	}
	r.want("a first look at a purged head", "lost 2 messages the removal ledger does not list (sequences 1..2)")

}
