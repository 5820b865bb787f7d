package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	last, err := streamLastSeq(ctx, js, stream)
	switch {
	case err != nil:
		return 0, streamGone(stream, applied, err)
	case last < applied:
		return last, fmt.Errorf("%w: projection at seq %d but stream %s ends at %d: the log was deleted or truncated; rebuild or restore",
			ErrLogBehind, applied, stream, last)
	}
	return last, nil
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

// boundedResets is the JetStream Run reads through: its ordered consumers
// give up after maxConsumerResets attempts.
type boundedResets struct{ jetstream.JetStream }

func (b boundedResets) OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	if cfg.MaxResetAttempts == 0 {
		cfg.MaxResetAttempts = maxConsumerResets
	}
	return b.JetStream.OrderedConsumer(ctx, stream, cfg)
}

// Run's pause between two reads of a log it could not read, doubling.
const (
	minReadRetry = 500 * time.Millisecond
	maxReadRetry = 30 * time.Second
)

// transientRead reports read errors worth another read: the server or the
// connection did not answer, not an answer that the log is gone or bad.
func transientRead(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrConsumerDeleted)
}
