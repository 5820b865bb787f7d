package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loadBatch is the most messages asked for in one pull.
const loadBatch = 1024

// Load implements Log.
//
// It reads the subject's last sequence from the stream leader, then reads
// the tail with an ephemeral, unacknowledged, in-memory pull consumer filtered
// on the subject and starting at afterSeq+1 (what an ordered consumer does,
// without its reset machinery: one Load is one short read). It stops at the
// leader's last sequence and deletes the consumer before returning, also
// when ctx ends; if the process dies first, the server removes it after
// InactiveThreshold. On a cluster the consumer may live on a replica that
// has not stored the latest messages yet: the read goes on until it has
// read up to the leader's last sequence, unless the leader holds no more
// of the subject there.
//
// A batched direct get ($JS.API.DIRECT.GET) was measured slower: the server
// rewrites every stored message's headers for it (net/http.Header), about
// twice the cost of a consumer for a 1,000-message aggregate.
func (l *JetStreamLog) Load(ctx context.Context, subject string, afterSeq uint64, fn func(Record) error) (uint64, error) {
	last, err := l.LastSeq(ctx, subject)
	if err != nil {
		return afterSeq, err
	}
	if last <= afterSeq {
		return afterSeq, nil
	}
	// Not cut short by the end of ctx (only by the timeout): a creation
	// abandoned half way may still create the consumer, which then nobody
	// deletes. The end of ctx is seen at the first fetch.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	cons, err := l.js.CreateConsumer(cctx, l.stream, jetstream.ConsumerConfig{
		Description:       "agentmem load " + subject,
		FilterSubject:     storedIn(l.part, subject),
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       afterSeq + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: time.Minute,
	})
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return afterSeq, fmt.Errorf("%w: load %s: stream %s not found (deleted?): %w", ErrNoStream, subject, l.stream, err)
	}
	if err != nil {
		return afterSeq, fmt.Errorf("events: load %s: create consumer: %w", subject, err)
	}
	defer func() {
		// Delete even when ctx is done: do not leave the consumer behind.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
		defer cancel()
		_ = l.js.DeleteConsumer(dctx, l.stream, cons.CachedInfo().Name)
	}()

	done := afterSeq
	pending := cons.CachedInfo().NumPending // matching messages the consumer's server held at its creation
	var retry noResponders
	for done < last {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		want := int(min(pending, loadBatch))
		if want == 0 {
			// The count is the consumer's server's: on a replica behind
			// the leader it falls short of last. The leader tells whether
			// a message is left up to last (none: the tail was purged
			// meanwhile); the pull waits for the replica to store it.
			more, err := l.storedAfter(ctx, subject, done, last)
			if err != nil {
				return done, fmt.Errorf("events: load %s: %w", subject, err)
			}
			if !more {
				break
			}
			want = 1
		}
		maxWait := l.timeout
		if dl, ok := ctx.Deadline(); ok {
			maxWait = max(min(maxWait, time.Until(dl)), time.Millisecond)
		}
		batch, err := fetch(ctx, cons, want, maxWait, &retry)
		if err != nil {
			return done, fmt.Errorf("events: load %s: fetch: %w", subject, err)
		}
		got := 0
		var stop error
		for m := range batch.Messages() {
			got++
			if done >= last || stop != nil {
				// Drain: messages stored after the leader's last sequence,
				// or the rest of a batch fn stopped in (the fetch ends
				// once its messages are delivered, not before).
				continue
			}
			md, err := m.Metadata()
			if err != nil {
				stop = fmt.Errorf("events: load %s: %w", subject, err)
				continue
			}
			seq := md.Sequence.Stream
			if seq <= done || seq > last {
				done = max(done, min(seq, last))
				continue
			}
			if err := ctx.Err(); err != nil {
				stop = err
				continue
			}
			if err := fn(Record{Subject: logicalIn(l.part, m.Subject()), Seq: seq, Time: md.Timestamp, Data: m.Data()}); err != nil {
				stop = err
				continue
			}
			done = seq
		}
		if stop != nil {
			return done, stop
		}
		if err := batch.Error(); err != nil && done < last {
			if got == 0 && errors.Is(err, nats.ErrNoResponders) && retry.again(ctx) {
				continue // the pull reached no consumer: pull again
			}
			return done, fmt.Errorf("events: load %s: fetch: %w", subject, err)
		}
		if got == 0 {
			break // nothing more matches: purged
		}
		pending -= min(pending, uint64(got))
	}
	return last, nil
}

// fetchRetryFor bounds how long a pull answered "no responders" is
// retried.
const fetchRetryFor = 3 * time.Second

// noResponders paces the pulls of one Load answered "no responders": on a
// clustered stream the consumer just created may live on another server,
// and the server the client is on can answer a first pull before it knows
// the consumer takes pulls (TestEraseOnACluster failed on it 5 runs in 55
// under load). The answer comes at once (Fetch's error) or, most often,
// as the batch's error with no message; both are pulled again, 20 ms apart,
// doubling up to 500 ms, for at most fetchRetryFor from the first.
type noResponders struct {
	deadline time.Time
	wait     time.Duration
}

// again waits before the next pull and reports whether to make it (false
// once fetchRetryFor passed or ctx ended).
func (r *noResponders) again(ctx context.Context) bool {
	now := time.Now()
	if r.deadline.IsZero() {
		r.deadline, r.wait = now.Add(fetchRetryFor), 20*time.Millisecond
	}
	if now.After(r.deadline) {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(r.wait):
	}
	r.wait = min(2*r.wait, 500*time.Millisecond)
	return true
}

// fetch pulls up to want messages from cons; a pull refused at once with
// "no responders" is made again while retry allows.
func fetch(ctx context.Context, cons jetstream.Consumer, want int, maxWait time.Duration, retry *noResponders) (jetstream.MessageBatch, error) {
	for {
		batch, err := cons.Fetch(want, jetstream.FetchMaxWait(maxWait))
		if !errors.Is(err, nats.ErrNoResponders) || !retry.again(ctx) {
			return batch, err
		}
	}
}
