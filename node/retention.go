package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// archiveSweep archives terminated sessions (DESIGN §12 retention): every
// interval it pages through the projection's session index for TERMINATED
// sessions whose last change is older than after, and sends each one
// ARCHIVE as the node (no caller). The session's actor decides and stores
// the status change (SessionStatusChanged TERMINATED → ARCHIVED, reason
// naming the bound; the batch records the time), and ends its
// session:<id> scope again. The projection's updated time is at least the
// terminate's, so a session is never archived early; a lagging projection
// only archives late. A session archived meanwhile answers 409, which is
// not an error here. Sessions are archived one at a time (each waits for
// its reply), so a sweep never floods the actors.
type archiveSweep struct {
	sessions interface {
		ListSessions(*memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error)
	}
	d        api.Dispatcher
	after    time.Duration
	interval time.Duration
	timeout  time.Duration
	now      func() time.Time
	logger   *slog.Logger
}

// archiveSweepInterval is how often the sweep runs for a bound of after:
// half of it, between 10 ms and 10 minutes.
func archiveSweepInterval(after time.Duration) time.Duration {
	return min(max(after/2, 10*time.Millisecond), 10*time.Minute)
}

// Run sweeps every interval until ctx ends.
func (s *archiveSweep) Run(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := s.sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("archive sweep stopped early; the next one resumes", "archived", n, "err", err)
		} else if n > 0 {
			s.logger.Info("archived terminated sessions", "archived", n, "archive_after", s.after.String())
		}
	}
}

// sweep archives what is due now and returns how many it archived.
func (s *archiveSweep) sweep(ctx context.Context) (int, error) {
	cutoff := s.now().Add(-s.after).UnixNano()
	reason := fmt.Sprintf("retention: terminated over %s ago (archive-after)", s.after)
	archived := 0
	req := &memoryv1.ListSessionsRequest{Status: memoryv1.SessionStatus_SESSION_STATUS_TERMINATED, Limit: 100}
	for {
		page, next, err := s.sessions.ListSessions(req)
		if err != nil {
			return archived, err
		}
		for _, e := range page {
			if e.GetUpdatedUnixNano() > cutoff {
				continue
			}
			if err := ctx.Err(); err != nil {
				return archived, err
			}
			switch err := s.archive(ctx, e.GetSessionId(), reason); {
			case err == nil:
				archived++
			case api.Classify(err).Code == 409: // archived meanwhile
			default:
				return archived, fmt.Errorf("archive session %q: %w", e.GetSessionId(), err)
			}
		}
		if next == "" {
			return archived, nil
		}
		req.PageToken = next
	}
}

// archive sends one session ARCHIVE and waits for its answer.
func (s *archiveSweep) archive(ctx context.Context, id, reason string) error {
	done := make(chan error, 1)
	body := &memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_ARCHIVE, Reason: reason}
	if err := s.d.Dispatch(id, nil, body, actors.ReplyFunc(func(_ proto.Message, err error) { done <- err })); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.timeout):
		return errors.New("no answer in time")
	}
}
