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
// Scopes are compacted one at a time, each waiting for its reply.
type logCompactor struct {
	js     jetstream.JetStream
	stream string
	eraser interface {
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
	before := c.now().Add(-c.window)
	s, err := c.js.Stream(ctx, c.stream)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", c.stream, err)
	}
	if s.CachedInfo().Config.DenyPurge {
		if !c.warned {
			c.warned = true
			c.logger.Warn("the log stream denies purges: the log is not compacted (--log-window); move it with `replay migrate-log`", "stream", c.stream)
		}
		return 0, 0, nil
	}
	var (
		n       int
		removed uint64
	)
	// The scopes' subjects only, kind by kind (a session's are never read).
	subjects := map[string]uint64{}
	for _, k := range sharedmem.Kinds() {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(events.SubjectPrefix+"."+actors.AggregateKind(k)+".*"))
		if err != nil {
			return 0, 0, fmt.Errorf("stream %s subjects: %w", c.stream, err)
		}
		maps.Copy(subjects, info.State.Subjects)
	}
	for subject, count := range subjects {
		if count < 2 {
			continue
		}
		kind, id, err := events.ParseSubject(subject)
		if err != nil {
			continue
		}
		it, err := erasure.ParseItem(kind + "." + id)
		if err != nil || it.Kind != erasure.ItemScope {
			continue
		}
		first, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
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
