package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// watcher serves the API's watch long polls from the log: a short read of
// the aggregate's subject after from_seq (events.Log.Load: a consumer of
// the node's own, deleted before it returns), and, when there is nothing
// yet, a core subscription on the subject that wakes the poll when the next
// change is stored. Tenants never touch JetStream: the node reads for them.
//
// Reads are bounded (reads, a semaphore) so the node's own consumers stay
// bounded however many polls wait: at most cap(reads) for watches, besides
// the actors' recoveries (actors.Config.MaxConcurrentRecoveries) and the
// projector's one.
type watcher struct {
	log   events.Log
	nc    *nats.Conn
	reads chan struct{}
}

// maxWatchReads bounds the log reads of watch polls in flight at once.
const maxWatchReads = 64

var _ api.Watcher = watcher{}

// errEnough stops a Load once the poll has max changes.
var errEnough = errors.New("node: watch has enough changes")

// Watch implements api.Watcher.
func (w watcher) Watch(ctx context.Context, subject string, fromSeq uint64, maxChanges int, wait time.Duration) ([]*memoryv1.WatchChange, uint64, error) {
	var wake chan struct{}
	if wait > 0 {
		// Subscribe before the first read: a change stored between the read
		// and the subscription still wakes the poll.
		wake = make(chan struct{}, 1)
		sub, err := w.nc.Subscribe(subject, func(*nats.Msg) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return nil, fromSeq, fmt.Errorf("node: watch %s: %w", subject, err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// A core subscriber may see a message before the stream stored it (or
	// one the stream refused, such as a fenced append): after a wake that
	// read nothing, read again a few times, shortly, rather than sleep until
	// the next change or the end of the wait. The first read rechecks too: a
	// change published just before the subscription (its wake missed) may
	// be stored just after that read.
	var recheck <-chan time.Time
	left := watchRechecks
	for {
		changes, err := w.read(ctx, subject, fromSeq, maxChanges)
		if err != nil || len(changes) > 0 || wait <= 0 {
			last := fromSeq
			if n := len(changes); n > 0 {
				last = changes[n-1].GetSeq()
			}
			return changes, last, err
		}
		if left > 0 {
			left--
			recheck = time.After(watchRecheck)
		} else {
			recheck = nil
		}
		select {
		case <-wake:
			left = watchRechecks
		case <-recheck:
		case <-timer.C:
			return nil, fromSeq, nil
		case <-ctx.Done():
			return nil, fromSeq, ctx.Err()
		}
	}
}

// A poll woken by a change it cannot read yet reads again watchRechecks
// times, watchRecheck apart.
const (
	watchRecheck  = 20 * time.Millisecond
	watchRechecks = 10
)

// read returns up to maxChanges changes of subject after fromSeq.
func (w watcher) read(ctx context.Context, subject string, fromSeq uint64, maxChanges int) ([]*memoryv1.WatchChange, error) {
	select {
	case w.reads <- struct{}{}:
		defer func() { <-w.reads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var out []*memoryv1.WatchChange
	_, err := w.log.Load(ctx, subject, fromSeq, func(rec events.Record) error {
		b, err := events.DecodeBatch(rec.Data)
		if err != nil {
			return fmt.Errorf("seq %d: %w", rec.Seq, err)
		}
		out = append(out, &memoryv1.WatchChange{Seq: rec.Seq, Subject: rec.Subject, Batch: b})
		if len(out) >= maxChanges {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return out, fmt.Errorf("node: watch %s: %w", subject, err)
	}
	return out, nil
}
