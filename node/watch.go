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

// watcher serves the API's watch long polls from the log: a short,
// bounded read of the aggregate's subject after from_seq through the one
// read interface of the whole stream (events.StreamReader with
// events.WithSubjects, up to the last sequence the stream holds: a read the
// node makes for the tenant, its consumer gone when it returns) and, when
// there is nothing yet, a core subscription on the subject that wakes the
// poll when the next change is stored. Tenants never touch JetStream: the
// node reads for them. Sequences the stream no longer holds (erased,
// compacted away, below a moved first sequence) are skipped by the reader:
// a watch from an old sequence starts at the next one held.
//
// Reads are bounded (reads, a semaphore) so the node's own consumers stay
// bounded however many polls wait: at most cap(reads) for watches, besides
// the actors' recoveries (actors.Config.MaxConcurrentRecoveries) and the
// projector's one.
type watcher struct {
	log   events.StreamReader
	nc    *nats.Conn
	reads chan struct{}
	// route, with the log in partitions, is the reader of the stream
	// holding an aggregate's subject and the subject its messages are
	// published on (nil: log and the subject itself).
	route func(subject string) (events.StreamReader, string, error)
}

// maxWatchReads bounds the log reads of watch polls in flight at once;
// maxInspectorWatchReads those of the inspector's live pages, which have
// a watcher of their own.
const (
	maxWatchReads          = 64
	maxInspectorWatchReads = 16
)

var _ api.Watcher = watcher{}

// Watch implements api.Watcher.
func (w watcher) Watch(ctx context.Context, subject string, fromSeq uint64, maxChanges int, wait time.Duration) ([]*memoryv1.WatchChange, uint64, error) {
	published := subject
	if w.route != nil {
		var err error
		if w.log, published, err = w.route(subject); err != nil {
			return nil, fromSeq, fmt.Errorf("node: watch %s: %w", subject, err)
		}
	}
	var wake chan struct{}
	if wait > 0 {
		// Subscribe before the first read: a change stored between the read
		// and the subscription still wakes the poll.
		wake = make(chan struct{}, 1)
		sub, err := w.nc.Subscribe(published, func(*nats.Msg) {
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
	b, err := w.log.Bounds(ctx)
	if err != nil {
		return nil, fmt.Errorf("node: watch %s: %w", subject, err)
	}
	if b.Last <= fromSeq {
		return nil, nil
	}
	cur, err := w.log.Read(ctx, fromSeq+1, events.WithSubjects(subject), events.WithStop(b.Last), events.WithReadAhead(maxChanges))
	if err != nil {
		return nil, fmt.Errorf("node: watch %s: %w", subject, err)
	}
	defer cur.Close()
	var out []*memoryv1.WatchChange
	for len(out) < maxChanges {
		rec, err := cur.Next(ctx)
		if errors.Is(err, events.ErrEndOfRead) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("node: watch %s: %w", subject, err)
		}
		batch, err := events.DecodeBatch(rec.Data)
		if err != nil {
			return out, fmt.Errorf("node: watch %s: seq %d: %w", subject, rec.Seq, err)
		}
		out = append(out, &memoryv1.WatchChange{Seq: rec.Seq, Subject: rec.Subject, Batch: batch})
	}
	return out, nil
}
