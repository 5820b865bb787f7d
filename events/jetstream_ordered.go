package events

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumerDeleteTimeout bounds the deletion of a read's consumer when the
// read ends.
const consumerDeleteTimeout = 2 * time.Second

// orderedRead is one read of a stream through an ordered consumer: the
// message iterator and the consumer on the server under it. Every read
// this package makes with an ordered consumer goes through it, so that
// none outlives its read.
//
// Stopping an ordered consumer's iterator only ends it in this process:
// the server keeps the consumer until its inactivity threshold (5 minutes)
// has passed, and counts it against the stream's and the account's
// consumer limits meanwhile. A node that served one read per request would
// soon be refused new consumers. So stop also deletes the consumer the
// iterator was on (the ones the ordered consumer replaced on a reset it
// deletes itself). Only a creation that timed out (see openOrdered) can
// leave the server a consumer this process never heard of: that one goes
// after the inactivity threshold.
type orderedRead struct {
	js     jetstream.JetStream
	stream string
	cons   jetstream.Consumer
	it     jetstream.MessagesContext
	once   sync.Once
}

// openOrdered creates an ordered consumer on stream with cfg and starts
// its iterator, pulling up to pullMax messages ahead (opts: more options of
// the iterator, such as its heartbeat).
//
// The creation is not cut short by the end of ctx, only bounded by
// timeout: a request abandoned half way may still create the consumer on
// the server, under a name this process would never learn. If ctx ended
// meanwhile, the consumer is deleted and ctx's error returned.
func openOrdered(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig, pullMax int, timeout time.Duration, opts ...jetstream.PullMessagesOpt) (*orderedRead, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	cons, err := js.OrderedConsumer(cctx, stream, cfg)
	cancel()
	if err != nil {
		return nil, err
	}
	r := &orderedRead{js: js, stream: stream, cons: cons}
	if err := ctx.Err(); err != nil {
		r.deleteConsumer()
		return nil, err
	}
	if r.it, err = cons.Messages(append([]jetstream.PullMessagesOpt{jetstream.PullMaxMessages(pullMax)}, opts...)...); err != nil {
		r.deleteConsumer()
		return nil, err
	}
	return r, nil
}

// next returns the next message, as the iterator's Next.
func (r *orderedRead) next(ctx context.Context) (jetstream.Msg, error) {
	return r.it.Next(jetstream.NextContext(ctx))
}

// stop ends the iterator and deletes the consumer on the server, waiting
// up to consumerDeleteTimeout for the server's answer. It is idempotent
// and safe from any goroutine; a concurrent call returns once the first
// one has.
func (r *orderedRead) stop() {
	r.once.Do(func() {
		// Once the iterator is stopped the ordered consumer creates no
		// other consumer (a reset under way has finished: Stop waits for
		// it), so the one it names now is the last.
		r.it.Stop()
		r.deleteConsumer()
	})
}

// deleteConsumer deletes the consumer the ordered consumer is on. It is
// best effort: a consumer already gone, or a server that does not answer,
// leaves nothing more to do here.
func (r *orderedRead) deleteConsumer() {
	info := r.cons.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), consumerDeleteTimeout)
	defer cancel()
	_ = r.js.DeleteConsumer(ctx, r.stream, info.Name)
}
