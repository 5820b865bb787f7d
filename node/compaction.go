package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// logCompactor bounds the log (DESIGN §12): every interval it lists the
// log's subjects and sends each scope aggregate (agent, user, project, …,
// session scope) whose oldest message was written before the time-travel
// window a CompactAggregate, as the node: its actor rewrites it from a
// ScopeBaseline and removes the older messages (actors: compact). A scope
// with one message, or none older than the window, is left alone. Sessions
// are not compacted: their events are their messages (recall and search
// read them); a session's log ends with the session (--delete-after).
// Scopes are compacted one at a time, each waiting for its reply.
type logCompactor struct {
	js       jetstream.JetStream
	stream   string
	scopes   api.ScopeDispatcher
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
	before := c.now().Add(-c.window).UnixNano()
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
		kind, id, ok := compactableScope(subject)
		if !ok {
			continue
		}
		first, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			continue // removed meanwhile
		}
		if batchTime(first) >= before {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, removed, err
		}
		rep, err := c.compact(ctx, kind, id, compactionID(subject, first.Sequence), before)
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

// compactableScope maps a log subject to the scope it holds (not a
// session, a removal or large data).
func compactableScope(subject string) (sharedmem.Kind, string, bool) {
	kind, id, err := events.ParseSubject(subject)
	if err != nil {
		return "", "", false
	}
	if kind == actors.SessionScopeKind {
		return sharedmem.KindSession, id, true
	}
	k, err := sharedmem.ParseKind(kind)
	if err != nil || k == sharedmem.KindSession {
		return "", "", false
	}
	return k, id, true
}

// batchTime is the command time of a stored batch (its stream time if the
// batch has none or does not decode).
func batchTime(m *jetstream.RawStreamMsg) int64 {
	if b, err := events.DecodeBatch(m.Data); err == nil && b.GetTimeUnixNano() != 0 {
		return b.GetTimeUnixNano()
	}
	return m.Time.UnixNano()
}

// compactionID names the compaction of subject whose first message is at
// seq: the same until that message is removed, so a compaction cut short
// before its purge is resumed by the next sweep.
func compactionID(subject string, seq uint64) string {
	h := sha256.Sum256([]byte("compact\x00" + subject + "\x00" + strconv.FormatUint(seq, 10)))
	return "k" + hex.EncodeToString(h[:16])
}

// compact sends one CompactAggregate and waits for its receipt.
func (c *logCompactor) compact(ctx context.Context, kind sharedmem.Kind, id, removalID string, before int64) (*memoryv1.EraseReceipt, error) {
	done := make(chan proto.Message, 1)
	errc := make(chan error, 1)
	body := &memoryv1.CompactAggregate{RemovalId: removalID, BeforeUnixNano: before}
	if err := c.scopes.DispatchScope(kind, id, nil, body, actors.ReplyFunc(func(m proto.Message, err error) {
		if err != nil {
			errc <- err
			return
		}
		done <- m
	})); err != nil {
		return nil, err
	}
	select {
	case m := <-done:
		rep, ok := m.(*memoryv1.EraseReceipt)
		if !ok {
			return nil, fmt.Errorf("compaction answered %T", m)
		}
		return rep, nil
	case err := <-errc:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(c.timeout):
		return nil, fmt.Errorf("no answer in time")
	}
}
