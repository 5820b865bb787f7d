package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// logCompactor bounds the log: every interval it lists the log's subjects
// and has each scope aggregate (agent, user, project, …, session scope)
// whose oldest message was written before the time-travel window compacted
// (erasure.Coordinator.Compact, as the node): its actor rewrites it from a
// ScopeBaseline and removes the older messages (actors: compact). A scope
// with one message, or none older than the window, is left alone. Sessions
// are not compacted: their events are their messages (recall and search
// read them); a session's log ends with the session (--delete-after).
// Scopes are compacted one at a time, each waiting for its reply. With
// the log in K > 1 partitions each partition stream is swept in turn
// (a scope's messages, and its compaction's ledger records, are in its
// own stream).
type logCompactor struct {
	js     jetstream.JetStream
	stream string
	// partitions is K (0 or 1: the one stream).
	partitions int
	eraser     interface {
		Compact(ctx context.Context, kind sharedmem.Kind, id, removalID string, before time.Time) (*memoryv1.EraseReceipt, error)
	}
	window   time.Duration
	interval time.Duration
	timeout  time.Duration
	now      func() time.Time
	logger   *slog.Logger
	warned   bool // the deny-purge warning was logged; only Run's goroutine uses it
}

// compactInterval is how often the compactor runs for a window: a tenth
// of it, between 10 ms and 1 hour.
func compactInterval(window time.Duration) time.Duration {
	return min(max(window/10, 10*time.Millisecond), time.Hour)
}

// Run compacts every interval until ctx ends.
func (c *logCompactor) Run(ctx context.Context) error {
	return every(ctx, c.interval, func() {
		n, removed, err := c.sweep(ctx)
		if err != nil && ctx.Err() == nil {
			c.logger.Warn("log compaction stopped early; the next one resumes", "scopes", n, "removed", removed, "err", err)
		} else if n > 0 {
			c.logger.Info("compacted the log", "scopes", n, "removed", removed, "window", c.window.String())
		}
	})
}

// sweep compacts what is due now: the scopes rewritten and the messages
// removed.
func (c *logCompactor) sweep(ctx context.Context) (int, uint64, error) {
	k := max(c.partitions, 1)
	var (
		n       int
		removed uint64
	)
	for i := range k {
		pn, pr, err := c.sweepStream(ctx, i, k)
		n, removed = n+pn, removed+pr
		if err != nil {
			return n, removed, err
		}
	}
	return n, removed, nil
}

// sweepStream is sweep of partition i's stream among k (k = 1: the one
// stream).
func (c *logCompactor) sweepStream(ctx context.Context, i, k int) (int, uint64, error) {
	before := c.now().Add(-c.window)
	name := events.PartitionStream(c.stream, i, k)
	s, err := c.js.Stream(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", name, err)
	}
	if s.CachedInfo().Config.DenyPurge {
		if !c.warned {
			c.warned = true
			c.logger.Warn("the log stream denies purges: the log is not compacted (--log-window); move it with `replay migrate-log`", "stream", name)
		}
		return 0, 0, nil
	}
	var (
		n       int
		removed uint64
	)
	// The scopes' subjects only, kind by kind (a session's are never read).
	subjects := map[string]uint64{}
	for _, kind := range sharedmem.Kinds() {
		filter := events.StoredSubject(events.SubjectPrefix+"."+actors.AggregateKind(kind)+".*", i, k)
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return 0, 0, fmt.Errorf("stream %s subjects: %w", name, err)
		}
		maps.Copy(subjects, info.State.Subjects)
	}
	for stored, count := range subjects {
		if count < 2 {
			continue
		}
		_, kind, id, err := events.ParseStoredSubject(stored)
		if err != nil {
			continue
		}
		subject := events.ScopeSubject(kind, id) // the logical subject: the compaction's id names it
		it, err := erasure.ParseItem(kind + "." + id)
		if err != nil || it.Kind != erasure.ItemScope {
			continue
		}
		first, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(stored))
		if err != nil {
			continue // removed meanwhile
		}
		if batchTime(first) >= before.UnixNano() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, removed, err
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		rep, err := c.eraser.Compact(cctx, it.Scope, it.ID, erasure.CompactionID(subject, first.Sequence), before)
		cancel()
		if err != nil {
			return n, removed, fmt.Errorf("compact %s: %w", subject, err)
		}
		if rep.GetMessages() > 0 {
			n++
			removed += rep.GetMessages()
		}
	}
	return n, removed, nil
}

// batchTime is the command time of a stored batch (its stream time if the
// batch has none or does not decode).
func batchTime(m *jetstream.RawStreamMsg) int64 {
	if b, err := events.DecodeBatch(m.Data); err == nil && b.GetTimeUnixNano() != 0 {
		return b.GetTimeUnixNano()
	}
	return m.Time.UnixNano()
}
