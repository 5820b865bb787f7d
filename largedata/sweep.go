package largedata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Sweep deletes every object whose lease has ended and that the Holder (if
// any) no longer holds, and records each with a
// DataExpired event (version 2, expected last sequence = the DataStored
// message). It returns how many objects it deleted; failures on single
// objects do not stop the sweep and are returned joined.
//
// Order per object: the event first, then the object, then the memory tier.
// The event is the decision; a sweep that stops after it deletes the object
// on the next run without a second event (the subject's last batch already
// has version 2). An object without any event (its Put failed after writing
// it) is deleted without an event: nothing indexed it.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	infos, err := s.obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("largedata: list bucket %s: %w", s.cfg.Bucket, err)
	}
	now := s.now().UnixNano()
	var errs []error
	expired := 0
	for _, info := range infos {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if info.Deleted || checkID(info.Name) != nil {
			continue // not one of ours
		}
		ref, err := refOf(info)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !s.leaseEnded(ref, now) || s.held(ctx, ref) {
			continue
		}
		if err := s.expire(ctx, info.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		expired++
	}
	return expired, errors.Join(errs...)
}

func (s *Store) expire(ctx context.Context, id string) error {
	subject := events.ScopeSubject(Kind, id)
	last, err := s.log.LastSeq(ctx, subject)
	if err != nil {
		return fmt.Errorf("largedata: expire %s: last seq: %w", id, err)
	}
	if last > 0 {
		version, err := s.versionAt(ctx, subject, last)
		if err != nil {
			return fmt.Errorf("largedata: expire %s: %w", id, err)
		}
		if version == 1 {
			if _, err := s.appendEvent(ctx, id, last, 2, expireCommand, expiredMsgID(id), &memoryv1.DataExpired{Id: id}); err != nil {
				return err
			}
		}
	}
	if err := s.obj.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("largedata: expire %s: delete object: %w", id, err)
	}
	s.mem.remove(id)
	return nil
}

// versionAt is the aggregate version of the batch stored at seq on subject.
func (s *Store) versionAt(ctx context.Context, subject string, seq uint64) (uint64, error) {
	var version uint64
	_, err := s.log.Load(ctx, subject, seq-1, func(r events.Record) error {
		if r.Seq != seq {
			return nil
		}
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return err
		}
		version = b.GetVersion()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("load %s at %d: %w", subject, seq, err)
	}
	if version == 0 {
		return 0, fmt.Errorf("load %s: no batch at %d", subject, seq)
	}
	return version, nil
}

// Run sweeps every Config.SweepEvery until ctx ends, then returns nil. A
// failed sweep is logged and retried at the next tick. Run starts no
// goroutine.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n, err := s.Sweep(ctx)
			if err != nil && ctx.Err() == nil {
				s.logger.Error("largedata sweep failed", "bucket", s.cfg.Bucket, "expired", n, "err", err)
			}
		}
	}
}
