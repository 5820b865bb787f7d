package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/erasure"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sessionLister lists the sessions the sweep looks at.
type sessionLister interface {
	ListSessions(*memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error)
}

// archiveSweep archives terminated sessions (retention): every
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
//
// With deleteAfter (delete_after) it then erases the ARCHIVED sessions
// whose last change (the archive) is older than deleteAfter, as an erase
// request does (erasure.Coordinator.Erase, reason RETENTION, requested by
// "node"): a recorded plan covering the session, its session:<id> scope
// and the large data it owns, each erased by its actor, content-free in
// the log. The plan's id is derived from the session id
// (erasure.RetentionID), so an erase cut short by a crash is resumed (not
// repeated); once the projector applied it the session leaves the index.
type archiveSweep struct {
	sessions sessionLister
	d        api.Dispatcher
	eraser   interface {
		Erase(ctx context.Context, req erasure.Request) (*memoryv1.EraseReceipt, error)
	}
	after       time.Duration // 0: no archiving
	deleteAfter time.Duration // 0: no erasing
	interval    time.Duration
	timeout     time.Duration
	now         func() time.Time
	logger      *slog.Logger
}

// archiveSweepInterval is how often the sweep runs for bounds of after and
// deleteAfter (0: none): half of the smaller one, between 10 ms and 10
// minutes.
func archiveSweepInterval(after, deleteAfter time.Duration) time.Duration {
	bound := after
	if bound == 0 || deleteAfter > 0 && deleteAfter < bound {
		bound = deleteAfter
	}
	return min(max(bound/2, 10*time.Millisecond), 10*time.Minute)
}

// Run sweeps every interval until ctx ends.
func (s *archiveSweep) Run(ctx context.Context) error {
	return every(ctx, s.interval, func() {
		if s.after > 0 {
			n, err := s.sweep(ctx)
			if err != nil && ctx.Err() == nil {
				s.logger.Warn("archive sweep stopped early; the next one resumes", "archived", n, "err", err)
			} else if n > 0 {
				s.logger.Info("archived terminated sessions", "archived", n, "archive_after", s.after.String())
			}
		}
		if s.deleteAfter > 0 {
			n, err := s.sweepErase(ctx)
			if err != nil && ctx.Err() == nil {
				s.logger.Warn("delete-after sweep stopped early; the next one resumes", "erased", n, "err", err)
			} else if n > 0 {
				s.logger.Info("erased archived sessions", "erased", n, "delete_after", s.deleteAfter.String())
			}
		}
	})
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
	body := &memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_ARCHIVE, Reason: reason}
	return s.call(ctx, func(r actors.ReplyFunc) error { return s.d.Dispatch(id, nil, body, r) })
}

// sweepErase erases the archived sessions due now and returns how many.
func (s *archiveSweep) sweepErase(ctx context.Context) (int, error) {
	cutoff := s.now().Add(-s.deleteAfter).UnixNano()
	why := fmt.Sprintf("retention: archived over %s ago (delete-after)", s.deleteAfter)
	erased := 0
	req := &memoryv1.ListSessionsRequest{Status: memoryv1.SessionStatus_SESSION_STATUS_ARCHIVED, Limit: 100}
	for {
		page, next, err := s.sessions.ListSessions(req)
		if err != nil {
			return erased, err
		}
		for _, e := range page {
			if e.GetUpdatedUnixNano() > cutoff {
				continue
			}
			if err := ctx.Err(); err != nil {
				return erased, err
			}
			if err := s.erase(ctx, e.GetSessionId(), why); err != nil {
				return erased, fmt.Errorf("erase session %q: %w", e.GetSessionId(), err)
			}
			erased++
		}
		if next == "" {
			return erased, nil
		}
		req.PageToken = next
	}
}

// erase erases session id as an erase request does, as the node, under
// the removal id erasure.RetentionID(id): a crash in between leaves the
// plan pending, and the node's resumption, or the next sweep, finishes it.
func (s *archiveSweep) erase(ctx context.Context, id, why string) error {
	_, err := s.eraser.Erase(ctx, erasure.Request{Target: erasure.SessionTarget(id), ID: erasure.RetentionID(id),
		Reason: memoryv1.RemovalReason_REMOVAL_REASON_RETENTION, By: "node", Why: why})
	return err
}

// call sends one command and waits for its answer, at most s.timeout.
func (s *archiveSweep) call(ctx context.Context, send func(actors.ReplyFunc) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := actors.Await(ctx, send)
	return err
}
