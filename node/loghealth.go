package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// logHealthInterval is how often a node reads the state of its log stream.
const logHealthInterval = 2 * time.Second

// logHealth watches the log stream from inside the node, as defense in
// depth against an operator (or anyone with JetStream rights) deleting or
// purging it underneath the node: it logs an error once per change of what
// it observes and keeps the gauge agentmem_log_healthy at 1 while the stream
// is there and has lost nothing since the node started, 0 otherwise.
//
// The log only grows (no limits, deny_delete, deny_purge), so between two
// observations the message count grows by exactly the sequences added. A
// stream that went back, or holds fewer messages than that, lost messages:
// that stays reported (latched) until the node restarts, when the start
// check compares the stream with the projection again. Only Run touches
// its fields, except current.
type logHealth struct {
	js       jetstream.JetStream
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

	prev    *jetstream.StreamState // the last state read; nil before the first
	lost    string                 // what was lost, once seen
	started bool
}

func newLogHealth(js jetstream.JetStream, stream string, applied func() uint64, logger *slog.Logger, reg prometheus.Registerer) *logHealth {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentmem_log_healthy",
		Help: "1 while the log stream exists and has lost no message since the node started; 0 otherwise (the node logs what it observed).",
	})
	reg.MustRegister(g)
	return &logHealth{js: js, stream: stream, applied: applied, logger: logger, gauge: g, interval: logHealthInterval, checks: make(chan chan string)}
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
	st, err := h.js.Stream(ctx, h.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "the stream does not exist: deleted underneath the node; appends and activations answer 503 until it is restored (a node restart refuses to recreate it while the projection holds events)"
	}
	if err != nil {
		return fmt.Sprintf("cannot read the stream's state: %v", err)
	}
	cur := st.CachedInfo().State
	if p := h.prev; p != nil {
		switch {
		case cur.LastSeq < p.LastSeq:
			h.lost = fmt.Sprintf("the stream went back from seq %d to %d (%d messages): deleted and recreated, or an older copy restored; aggregates written since answer 503, rebuild or restore",
				p.LastSeq, cur.LastSeq, cur.Msgs)
		case cur.Msgs < p.Msgs+(cur.LastSeq-p.LastSeq):
			h.lost = fmt.Sprintf("the stream lost %d messages (now seq %d..%d, %d messages, was %d): purged?; the purged aggregates answer 503",
				p.Msgs+(cur.LastSeq-p.LastSeq)-cur.Msgs, cur.FirstSeq, cur.LastSeq, cur.Msgs, p.Msgs)
		}
	}
	h.prev = &cur
	switch {
	case h.lost != "":
		return h.lost
	case cur.LastSeq < applied:
		return fmt.Sprintf("the stream ends at seq %d, before the projection's checkpoint %d: the log was deleted or truncated; rebuild or restore", cur.LastSeq, applied)
	}
	return ""
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
