package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/events"
)

// logHealthInterval is how often a node reads the state of its log stream.
const logHealthInterval = 2 * time.Second

// logHealthListMax is the most missing sequences the check asks the server
// to list; with more it compares counts (see unlisted).
const logHealthListMax = 1 << 16

// healthLog is what the log health check reads: the stream's bounds, its
// missing sequences and the removal ledger (events.JetStreamLog).
type healthLog interface {
	events.StreamReader
	events.GapLister
}

// logHealth watches the log stream from inside the node, as defense in
// depth against an operator (or anyone with JetStream rights) deleting or
// purging it underneath the node: it logs an error once per change of what
// it observes and keeps the gauge agentmem_log_healthy at 1 while the stream
// is there and has lost nothing since the node started, 0 otherwise.
//
// The log grows, except where the node removes messages on purpose (an
// erase, a retention erase, the bounded log's compaction): every such
// removal is recorded in the removal ledger before a message goes
// (events.KindRemoval). So between two observations the message count grows
// by exactly the sequences added, unless something was removed; then every
// sequence the stream no longer holds must be one the ledger lists, or one
// below the compaction baseline. A stream that went back, or lost a
// sequence the ledger does not list, lost messages: that stays reported
// (latched) until the node restarts, when the start check compares the
// stream with the projection again. Only Run touches its fields, except
// current.
type logHealth struct {
	log      healthLog
	stream   string
	applied  func() uint64 // the projection's checkpoint; nil without a projector
	logger   *slog.Logger
	gauge    prometheus.Gauge
	interval time.Duration

	// current is the problem last reported, for /healthz (nil: healthy).
	current atomic.Pointer[string]
	// checks asks Run for a check now (Check); Run answers on the channel
	// it receives.
	checks chan chan string

	prev    *events.Bounds // the last bounds read; nil before the first
	lost    string         // what was lost, once seen
	started bool

	// removed holds the sequences the removal ledger lists, read up to
	// sequence ledgerAt (read only once something went missing).
	removed  events.SpanSet
	ledgerAt uint64
}

// logHealthHelp is the help of agentmem_log_healthy.
const logHealthHelp = "1 while the log stream exists and has lost no message since the node started, but those the removal ledger lists; 0 otherwise (the node logs what it observed)."

func newLogHealth(log healthLog, stream string, applied func() uint64, logger *slog.Logger, reg prometheus.Registerer) *logHealth {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_log_healthy", Help: logHealthHelp})
	reg.MustRegister(g)
	return newLogHealthGauge(log, stream, applied, logger, g)
}

// newLogHealthGauge is a check of one stream setting gauge g.
func newLogHealthGauge(log healthLog, stream string, applied func() uint64, logger *slog.Logger, g prometheus.Gauge) *logHealth {
	return &logHealth{log: log, stream: stream, applied: applied, logger: logger, gauge: g, interval: logHealthInterval, checks: make(chan chan string)}
}

// Run checks the stream at once, then every interval and whenever Check
// asks, until ctx ends.
func (h *logHealth) Run(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	var answer chan string // the Check waiting for this round, if any
	for {
		cctx, cancel := context.WithTimeout(ctx, h.interval)
		problem := h.observe(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		h.report(problem)
		if answer != nil {
			answer <- problem // buffered: never blocks
			answer = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case answer = <-h.checks:
		}
	}
}

// Check has Run check the stream now and returns what it found ("":
// healthy), as /healthz reports it from then on. It fails when ctx ends
// first (or Run is not running).
func (h *logHealth) Check(ctx context.Context) (string, error) {
	answer := make(chan string, 1)
	select {
	case h.checks <- answer:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case p := <-answer:
		return p, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Problem is what Run last reported about the stream ("" healthy); safe
// from any goroutine.
func (h *logHealth) Problem() string {
	if p := h.current.Load(); p != nil {
		return *p
	}
	return ""
}

// observe reads the stream and returns what is wrong with it ("" nothing).
func (h *logHealth) observe(ctx context.Context) string {
	var applied uint64
	if h.applied != nil {
		applied = h.applied() // before the stream's state: never ahead of it
	}
	cur, err := h.log.Bounds(ctx)
	if errors.Is(err, events.ErrNoStream) {
		return "the stream does not exist: deleted underneath the node; appends and activations answer 503 until it is restored (a node restart refuses to recreate it while the projection holds events)"
	}
	if err != nil {
		return fmt.Sprintf("cannot read the stream's state: %v", err)
	}
	p := h.prev
	switch {
	case p != nil && cur.Last < p.Last:
		h.lost = fmt.Sprintf("the stream went back from seq %d to %d (%d messages): deleted and recreated, or an older copy restored; aggregates written since answer 503, rebuild or restore",
			p.Last, cur.Last, cur.Msgs)
	case h.lost != "":
		// Lost already: nothing comes back.
	case p == nil && (cur.First > 1 || cur.Missing() > 0),
		p != nil && cur.Msgs < p.Msgs+(cur.Last-p.Last):
		// At the first look, or since the last one, sequences went
		// missing: each must be in the removal ledger.
		lost, err := h.unlisted(ctx, cur)
		if err != nil {
			// Look again next time (prev stays: the removal is seen again).
			return fmt.Sprintf("cannot check the messages removed from the stream against the removal ledger: %v", err)
		}
		if lost != "" {
			h.lost = fmt.Sprintf("%s (now seq %d..%d, %d messages): purged behind the node's back?; the purged aggregates answer 503", lost, cur.First, cur.Last, cur.Msgs)
		}
	}
	h.prev = &cur
	switch {
	case h.lost != "":
		return h.lost
	case cur.Last < applied:
		return fmt.Sprintf("the stream ends at seq %d, before the projection's checkpoint %d: the log was deleted or truncated; rebuild or restore", cur.Last, applied)
	}
	return ""
}

// unlisted returns what the stream b lost outside the removal ledger ("":
// nothing): the sequences it no longer holds that no removal lists, nor lie
// below the compaction baseline. With more than logHealthListMax sequences
// missing in the middle of the stream it cannot name them: it compares
// their number with the number the ledger lists there, which misses a loss
// only while a removal listing as many messages has not removed them yet.
//
// An erase may run meanwhile (a node resuming one as it starts): its
// removal recorded after b was read, its purge done before the missing
// sequences are listed. So the ledger is read after the list, up to where
// the stream ends then: every removal whose purge the list shows was
// recorded before it.
func (h *logHealth) unlisted(ctx context.Context, b events.Bounds) (string, error) {
	var missing []uint64
	named := true
	if b.Missing() > 0 {
		var err error
		if missing, named, err = h.log.MissingSeqs(ctx, logHealthListMax); err != nil {
			return "", err
		}
	}
	if err := h.readLedger(ctx, b.Last, b.Missing() > 0); err != nil {
		return "", err
	}
	const from = 1
	// The head: every sequence below the first one held.
	lost := h.removed.Gaps(from, b.First-1)
	// The middle.
	if !named {
		if n := unlistedCount(&h.removed, b, from); n > 0 || len(lost) > 0 {
			return fmt.Sprintf("the stream lost at least %s the removal ledger does not list (%d missing between seq %d and %d, too many to name)",
				messages(spansLen(lost)+n), b.Missing(), b.First, b.Last), nil
		}
		return "", nil
	}
	var mid []uint64
	for _, s := range missing {
		if s >= from && !h.removed.Covers(s, s) {
			mid = append(mid, s)
		}
	}
	lost = append(lost, events.Spans(mid)...)
	if len(lost) == 0 {
		return "", nil
	}
	return fmt.Sprintf("the stream lost %s the removal ledger does not list (%s)", messages(spansLen(lost)), describeSpans(lost)), nil
}

// readLedger adds the removals recorded since its last call, up to last,
// or up to the stream's end now when later (again: the missing sequences
// were listed after the stream's bounds were read).
func (h *logHealth) readLedger(ctx context.Context, last uint64, again bool) error {
	if again {
		now, err := h.log.Bounds(ctx)
		if err != nil {
			return err
		}
		last = max(last, now.Last)
	}
	if last <= h.ledgerAt {
		return nil
	}
	led, err := events.ReadLedgerFrom(ctx, h.log, h.ledgerAt+1, last)
	if err != nil {
		return err
	}
	for _, r := range led.Removals {
		h.removed.Add(events.RemovedSpans(r.LogRemoval)...)
	}
	h.ledgerAt = last
	return nil
}

// unlistedCount is the fewest sequences from max(b.First, from) to b.Last
// that are missing though no removal lists them: those missing there, less
// those the ledger lists there. Sequences below from (the baseline) may be
// missing: as many of b's missing ones as fit below it are left out.
func unlistedCount(removed *events.SpanSet, b events.Bounds, from uint64) uint64 {
	lo := max(b.First, from)
	if b.Last < lo {
		return 0
	}
	listed := b.Last - lo + 1 - spansLen(removed.Gaps(lo, b.Last))
	missing := b.Missing()
	if from > b.First {
		missing -= min(missing, from-b.First)
	}
	return missing - min(missing, listed)
}

// messages is "1 message" or "N messages".
func messages(n uint64) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}

// spansLen is the number of sequences in spans.
func spansLen(spans []events.SeqSpan) uint64 {
	var n uint64
	for _, s := range spans {
		n += s.Last - s.First + 1
	}
	return n
}

// describeSpans names sequences: "sequences 3..7, 12" (the first five
// runs, then how many more).
func describeSpans(spans []events.SeqSpan) string {
	const named = 5
	var b strings.Builder
	b.WriteString("sequence")
	if len(spans) > 1 || spans[0].First != spans[0].Last {
		b.WriteString("s")
	}
	for i, s := range spans[:min(len(spans), named)] {
		if i > 0 {
			b.WriteString(",")
		}
		if s.First == s.Last {
			fmt.Fprintf(&b, " %d", s.First)
		} else {
			fmt.Fprintf(&b, " %d..%d", s.First, s.Last)
		}
	}
	if len(spans) > named {
		fmt.Fprintf(&b, " and %d more runs", len(spans)-named)
	}
	return b.String()
}

// report logs and sets the gauge when what is observed changed.
func (h *logHealth) report(problem string) {
	if h.started && problem == h.Problem() {
		return
	}
	first := !h.started
	h.started = true
	if problem != "" {
		h.current.Store(&problem)
		h.gauge.Set(0)
		h.logger.Error("log stream unhealthy", "stream", h.stream, "observed", problem)
		return
	}
	h.gauge.Set(1)
	h.current.Store(nil)
	if !first {
		h.logger.Info("log stream healthy again", "stream", h.stream)
	}
}
