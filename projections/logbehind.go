package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// ErrLogBehind is returned (wrapped) by CheckStream, and by Projector.Run,
// when the stream ends before the projection's checkpoint, or is missing
// while the projection holds events: the log was deleted, purged or
// replaced by a shorter one. Resuming would skip or misread records: rebuild
// the projection from the log (replay rebuild), or restore the log.
var ErrLogBehind = errors.New("projections: the log ends before the projection's checkpoint")

// CheckStream compares stream with a projection checkpoint (applied) and
// returns the stream's last sequence. The error wraps ErrLogBehind when the
// stream ends before applied, or does not exist while applied > 0; it wraps
// jetstream.ErrStreamNotFound whenever the stream does not exist.
func CheckStream(ctx context.Context, js jetstream.JetStream, stream string, applied uint64) (uint64, error) {
	cfg := events.DefaultJetStreamConfig()
	cfg.Stream = stream
	log, err := events.OpenJetStreamLog(js, cfg)
	if err != nil {
		return 0, fmt.Errorf("projections: stream %s: %w", stream, err)
	}
	return checkStream(ctx, log, stream, applied)
}

// checkStream is CheckStream on the log r.
func checkStream(ctx context.Context, r events.StreamReader, stream string, applied uint64) (uint64, error) {
	b, err := r.Bounds(ctx)
	switch {
	case err != nil:
		return 0, streamGone(stream, applied, fmt.Errorf("projections: stream %s: %w", stream, err))
	case b.Last < applied:
		return b.Last, fmt.Errorf("%w: projection at seq %d but stream %s ends at %d: the log was deleted or truncated; rebuild or restore",
			ErrLogBehind, applied, stream, b.Last)
	}
	return b.Last, nil
}

// streamGone wraps err with ErrLogBehind when it says stream does not
// exist while the projection holds events (applied > 0).
func streamGone(stream string, applied uint64, err error) error {
	if !errors.Is(err, jetstream.ErrStreamNotFound) || applied == 0 || errors.Is(err, ErrLogBehind) {
		return err
	}
	return fmt.Errorf("%w: projection at seq %d but stream %s does not exist: the log was deleted; restore it, or start over without the projection and the snapshots: %w",
		ErrLogBehind, applied, stream, err)
}

// maxConsumerResets bounds how often Run's ordered consumer re-creates its
// server-side consumer before the read fails (the client's default, -1,
// retries forever, even after the stream was deleted, and cannot be
// stopped meanwhile). Run then checks the stream and reads again itself.
const maxConsumerResets = 2

// boundedResets is the log Run reads through: its reads give up after
// maxConsumerResets consumer re-creations (events.WithMaxResets).
// reading (optional) is called each time one of them starts delivering
// (Read succeeded): the read works again.
type boundedResets struct {
	events.StreamReader
	reading func()
}

func (b boundedResets) Read(ctx context.Context, from uint64, opts ...events.ReadOption) (events.Cursor, error) {
	c, err := b.StreamReader.Read(ctx, from, append([]events.ReadOption{events.WithMaxResets(maxConsumerResets)}, opts...)...)
	if err == nil && b.reading != nil {
		b.reading()
	}
	return c, err
}

// Run's pause between two reads of a log it could not read, doubling. The
// cap is short: a read is one stream info request, and after a lost quorum
// or a restarted server the projector should be back within seconds (the
// node also wakes it when the log is available again).
const (
	minReadRetry = 500 * time.Millisecond
	maxReadRetry = 5 * time.Second
)

// stopsRun reports the errors Run stops on: what the log holds is wrong or
// gone (a record that cannot be applied, a log that ends before the
// checkpoint or was deleted under it) or the store is closed. Every other
// error is weather: a timeout, a lost quorum (JetStream
// "temporarily unavailable", 10008), an ordered consumer that gave up
// recreating itself (its iterator closed), a restarted or unreachable
// server; Run reads again from its checkpoint after a pause.
func stopsRun(err error) bool {
	return errors.Is(err, ErrApply) || errors.Is(err, ErrLogBehind) || errors.Is(err, ErrClosed)
}
