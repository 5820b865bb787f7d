package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrPartitions is returned (wrapped) when the streams on the server hold
// the log in another number of partitions than asked for: the one stream
// of today's layout when K > 1 is asked (move it with `replay migrate-log
// --partitions K`), or partition streams of another K.
var ErrPartitions = errors.New("events: the log is in another number of partitions")

// PartitionedLog is the Log over K streams (docs/PARTITIONS.md): each
// aggregate's subject lives in the stream of LogPartition(id, K), so order
// within an aggregate stays total and a sequence (Record.Seq,
// AppendResult.Seq, expectedLastSeq) is one of its own stream. Sequences of
// different partitions are not comparable. With K = 1 it is exactly the
// one JetStreamLog of today's layout.
type PartitionedLog struct {
	parts []*JetStreamLog
}

var (
	_ Log           = (*PartitionedLog)(nil)
	_ SubjectLister = (*PartitionedLog)(nil)
	_ Remover       = (*PartitionedLog)(nil)
)

// NewPartitionedLog creates the K streams of cfg.Stream, or updates them
// to cfg (each as NewJetStreamLog does one), and returns the log. K = 1 is
// NewJetStreamLog. For K > 1 it refuses (ErrPartitions) a server holding
// the one stream cfg.Stream, or partition streams recording another K, and
// (ErrMigrating, ErrCompacting) a partition left half-migrated or
// half-compacted.
func NewPartitionedLog(ctx context.Context, js jetstream.JetStream, cfg JetStreamConfig, k int) (*PartitionedLog, error) {
	if err := ValidatePartitions("partitions", k); err != nil {
		return nil, err
	}
	if k == 1 {
		l, err := NewJetStreamLog(ctx, js, cfg)
		if err != nil {
			return nil, err
		}
		return &PartitionedLog{parts: []*JetStreamLog{l}}, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkPartitions(ctx, js, cfg.Stream, k); err != nil {
		return nil, err
	}
	pl := &PartitionedLog{parts: make([]*JetStreamLog, k)}
	for i := range k {
		pc := partitionConfig(cfg, i, k)
		l, err := NewJetStreamLog(ctx, js, pc)
		if err != nil {
			return nil, fmt.Errorf("events: partition %d of %d: %w", i, k, err)
		}
		pl.parts[i] = l
	}
	return pl, nil
}

// OpenPartitionedLog returns the log over the existing K streams of
// cfg.Stream without creating or updating them (readers and tools), as
// OpenJetStreamLog does one.
func OpenPartitionedLog(js jetstream.JetStream, cfg JetStreamConfig, k int) (*PartitionedLog, error) {
	if err := ValidatePartitions("partitions", k); err != nil {
		return nil, err
	}
	pl := &PartitionedLog{parts: make([]*JetStreamLog, k)}
	for i := range k {
		l, err := OpenJetStreamLog(js, partitionConfig(cfg, i, k))
		if err != nil {
			return nil, err
		}
		pl.parts[i] = l
	}
	return pl, nil
}

// partitionConfig is cfg for partition i of k.
func partitionConfig(cfg JetStreamConfig, i, k int) JetStreamConfig {
	if k <= 1 {
		return cfg
	}
	cfg.partition, cfg.partitions = i, k
	cfg.Stream = PartitionStream(cfg.Stream, i, k)
	return cfg
}

// checkPartitions refuses a server whose streams hold the log of stream in
// another layout than k > 1 partitions.
func checkPartitions(ctx context.Context, js jetstream.JetStream, stream string, k int) error {
	// Between the halves of a migration the one stream is gone and its
	// copy holds the log.
	if err := CheckNotMigrating(ctx, js, stream); err != nil {
		return err
	}
	switch _, err := js.Stream(ctx, stream); {
	case err == nil:
		return fmt.Errorf("%w: stream %s holds the log in one stream, asked for %d partitions: move it with `replay migrate-log --partitions %d` (node stopped)", ErrPartitions, stream, k, k)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("events: stream %s: %w", stream, err)
	}
	for i := range k + 1 {
		name := PartitionStream(stream, i, k)
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("events: stream %s: %w", name, err)
		}
		have := s.CachedInfo().Config.Metadata[PartitionsMetadataKey]
		if i == k || have != strconv.Itoa(k) {
			return fmt.Errorf("%w: stream %s records %s=%q, asked for %d partitions", ErrPartitions, name, PartitionsMetadataKey, have, k)
		}
	}
	return nil
}

// Partitions is K.
func (l *PartitionedLog) Partitions() int { return len(l.parts) }

// Partition is the log of partition i's stream alone (0 <= i < K): a
// StreamReader of that stream, with logical subjects. Appending through
// it bypasses the routing: only the removal ledger, whose records go to
// the stream they describe, does.
func (l *PartitionedLog) Partition(i int) *JetStreamLog { return l.parts[i] }

// Streams are the names of the K streams, partition 0 first.
func (l *PartitionedLog) Streams() []string {
	out := make([]string, len(l.parts))
	for i, p := range l.parts {
		out[i] = p.Stream()
	}
	return out
}

// PartitionOf is the partition of the logical subject's aggregate (an
// error matching ErrInvalidID for a malformed subject).
func (l *PartitionedLog) PartitionOf(subject string) (int, error) {
	return SubjectPartition(subject, len(l.parts))
}

func (l *PartitionedLog) route(subject string) (*JetStreamLog, error) {
	i, err := l.PartitionOf(subject)
	if err != nil {
		return nil, err
	}
	return l.parts[i], nil
}

// Append implements Log in the stream of the subject's partition.
func (l *PartitionedLog) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (AppendResult, error) {
	p, err := l.route(subject)
	if err != nil {
		return AppendResult{}, err
	}
	return p.Append(ctx, subject, expectedLastSeq, msgID, data)
}

// Load implements Log from the stream of the subject's partition.
func (l *PartitionedLog) Load(ctx context.Context, subject string, afterSeq uint64, fn func(Record) error) (uint64, error) {
	p, err := l.route(subject)
	if err != nil {
		return afterSeq, err
	}
	return p.Load(ctx, subject, afterSeq, fn)
}

// LastSeq implements Log in the stream of the subject's partition.
func (l *PartitionedLog) LastSeq(ctx context.Context, subject string) (uint64, error) {
	p, err := l.route(subject)
	if err != nil {
		return 0, err
	}
	return p.LastSeq(ctx, subject)
}

// RemoveSubject implements Remover in the stream of the subject's
// partition.
func (l *PartitionedLog) RemoveSubject(ctx context.Context, subject string, upTo uint64) error {
	p, err := l.route(subject)
	if err != nil {
		return err
	}
	return p.RemoveSubject(ctx, subject, upTo)
}

// SubjectCounts implements SubjectLister over every partition (one stream
// info request each); the keys are logical subjects.
func (l *PartitionedLog) SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, p := range l.parts {
		m, err := p.SubjectCounts(ctx, filter)
		if err != nil {
			return nil, err
		}
		for s, n := range m {
			out[s] += n
		}
	}
	return out, nil
}

// LedgerLog is the log of the stream of subject's partition alone: the
// removal ledger of a removal of subject's messages is kept there, since
// the spans it lists are sequences of that stream (docs/PARTITIONS.md).
func (l *PartitionedLog) LedgerLog(subject string) (Log, error) {
	return l.route(subject)
}
