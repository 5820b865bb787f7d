package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
)

// logPartitions is the number of streams the log is in: 1 when the stream
// l.stream exists, else K as recorded in the metadata of its partition 0's
// stream (<stream>_P0, events.PartitionsMetadataKey), or of partition 1's
// while partition 0's is being migrated (migrate-log moves it last);
// neither is ErrNoStream.
func (l *link) logPartitions(ctx context.Context) (int, error) {
	switch _, err := l.js.Stream(ctx, l.stream); {
	case err == nil:
		return 1, nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, fmt.Errorf("replay: stream %s: %w", l.stream, err)
	}
	for _, p := range []string{l.stream + "_P0", l.stream + "_P1"} {
		s, err := l.js.Stream(ctx, p)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("replay: stream %s: %w", p, err)
		}
		have := s.CachedInfo().Config.Metadata[events.PartitionsMetadataKey]
		k, err := strconv.Atoi(have)
		if err != nil || events.ValidatePartitions("partitions", k) != nil || k < 2 {
			return 0, fmt.Errorf("replay: stream %s records %s=%q: not a log in partitions", p, events.PartitionsMetadataKey, have)
		}
		return k, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrNoStream, l.stream)
}

// partitionsOf is the number of streams the log is in: given (a
// --partitions flag; 0: not given) or read from the streams
// (logPartitions). Given, it must be the streams' number: another K would
// read streams that do not exist, or some of them only.
func (l *link) partitionsOf(ctx context.Context, given int) (int, error) {
	k, err := l.logPartitions(ctx)
	switch {
	case err != nil:
		return 0, err
	case given != 0 && given != k:
		return 0, fmt.Errorf("%w: --partitions %d, but the log %s is in %d stream(s) (leave --partitions out: it is read from the streams)", ErrUsage, given, l.stream, k)
	}
	return k, nil
}

// aggregateLog is the log l holds as an events.Log: the one stream, or
// for K > 1 the partitioned log (one aggregate's subject read from its
// partition's stream); and the stream that holds subject.
func (l *link) aggregateLog(ctx context.Context, subject string) (events.Log, string, error) {
	k, err := l.logPartitions(ctx)
	if err != nil {
		return nil, "", err
	}
	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = l.stream
	if k == 1 {
		log, err := events.OpenJetStreamLog(l.js, lcfg)
		if err != nil {
			return nil, "", fmt.Errorf("replay: %w", err)
		}
		return log, l.stream, nil
	}
	plog, err := events.OpenPartitionedLog(l.js, lcfg, k)
	if err != nil {
		return nil, "", fmt.Errorf("replay: %w", err)
	}
	p, err := plog.PartitionOf(subject)
	if err != nil {
		return nil, "", fmt.Errorf("replay: %w", err)
	}
	return plog, plog.Streams()[p], nil
}

// partitionLedgers is the removal ledger of a log in K > 1 partitions as
// time travel reads it (actors.LedgerStreams): every partition's stream;
// its own Bounds and Read are the session's partition's.
type partitionLedgers struct {
	events.StreamReader
	plog *events.PartitionedLog
}

var _ actors.LedgerStreams = partitionLedgers{}

// LedgerStreams are the K streams, partition 0 first.
func (p partitionLedgers) LedgerStreams() []events.StreamReader {
	out := make([]events.StreamReader, p.plog.Partitions())
	for i := range out {
		out[i] = p.plog.Partition(i)
	}
	return out
}

// PartitionOf is the partition of the logical subject.
func (p partitionLedgers) PartitionOf(subject string) (int, error) {
	return p.plog.PartitionOf(subject)
}
