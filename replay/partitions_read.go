package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// logPartitions is the number of streams the log is in: 1 when the stream
// l.stream exists, else K as recorded in the metadata of its partition 0's
// stream (<stream>_P0, events.PartitionsMetadataKey); neither is
// ErrNoStream.
func (l *link) logPartitions(ctx context.Context) (int, error) {
	switch _, err := l.js.Stream(ctx, l.stream); {
	case err == nil:
		return 1, nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, fmt.Errorf("replay: stream %s: %w", l.stream, err)
	}
	p0 := l.stream + "_P0"
	s, err := l.js.Stream(ctx, p0)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrNoStream, l.stream)
	}
	if err != nil {
		return 0, fmt.Errorf("replay: stream %s: %w", p0, err)
	}
	have := s.CachedInfo().Config.Metadata[events.PartitionsMetadataKey]
	k, err := strconv.Atoi(have)
	if err != nil || events.ValidatePartitions("partitions", k) != nil || k < 2 {
		return 0, fmt.Errorf("replay: stream %s records %s=%q: not a log in partitions", p0, events.PartitionsMetadataKey, have)
	}
	return k, nil
}

// aggregateLog is the log l holds as an events.Log: the one stream, or
// for K > 1 the partitioned log (one aggregate's subject read from its
// partition's stream); and the stream that holds subject.
func (l *link) aggregateLog(ctx context.Context, subject string) (events.Log, string, int, error) {
	k, err := l.logPartitions(ctx)
	if err != nil {
		return nil, "", 0, err
	}
	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = l.stream
	if k == 1 {
		log, err := events.OpenJetStreamLog(l.js, lcfg)
		if err != nil {
			return nil, "", 0, fmt.Errorf("replay: %w", err)
		}
		return log, l.stream, 1, nil
	}
	plog, err := events.OpenPartitionedLog(l.js, lcfg, k)
	if err != nil {
		return nil, "", 0, fmt.Errorf("replay: %w", err)
	}
	p, err := plog.PartitionOf(subject)
	if err != nil {
		return nil, "", 0, fmt.Errorf("replay: %w", err)
	}
	return plog, plog.Streams()[p], k, nil
}
