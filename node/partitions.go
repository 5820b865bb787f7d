package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/projections"
)

// The log in K > 1 partitions (--log-partitions, docs/PARTITIONS.md): the
// node writes through an events.PartitionedLog and its projector reads the
// K streams, each from its own checkpoint; a watch reads its aggregate's
// partition; erasure keeps the removal ledger per stream (an aggregate's
// removal in its own stream: LedgerLog), and the bounded log sweeps each
// stream, and the log health check checks each stream
// (loghealth_partitions.go); the inspector reads a session from its stream
// and time travel and the Erasures page the K ledgers (partitionedReader).
// Every node still projects every partition.

// errPartitionedRead answers the readers of the whole log that are not
// built per partition yet (erasure's ledger, the inspector's pages of the
// whole log).
var errPartitionedRead = errors.New("node: not served with --log-partitions > 1 yet (it reads the log as one stream)")

// noWholeLog is the StreamReader of a log in K > 1 partitions: there is no
// one stream to read.
type noWholeLog struct{}

func (noWholeLog) Bounds(context.Context) (events.Bounds, error) {
	return events.Bounds{}, errPartitionedRead
}

func (noWholeLog) Read(context.Context, uint64, ...events.ReadOption) (events.Cursor, error) {
	return nil, errPartitionedRead
}

// partitionMarks are, per partition, the highest sequence the node knows
// stored: the partition's last sequence when the node started, raised by
// every append the node made. A read waiting for a sequence of this node's
// writes (or for the log as it was at start) waits, in each partition, for
// that sequence or the partition's mark, whichever is lower: it knows the
// sequence but not its partition, and the sequence's own partition has a
// mark at least as high. A sequence another node wrote may be in a
// partition whose mark is lower: such a wait can end before that write is
// applied. A read given the write's consistency token (which names the
// partition, api/consistency) waits for exactly that partition instead.
type partitionMarks struct {
	marks []atomic.Uint64
}

func newPartitionMarks(k int) *partitionMarks {
	return &partitionMarks{marks: make([]atomic.Uint64, k)}
}

// raise records that partition part holds seq.
func (m *partitionMarks) raise(part int, seq uint64) {
	for {
		cur := m.marks[part].Load()
		if seq <= cur || m.marks[part].CompareAndSwap(cur, seq) {
			return
		}
	}
}

// targets are what each partition must have applied for a wait for seq.
func (m *partitionMarks) targets(seq uint64) []uint64 {
	out := make([]uint64, len(m.marks))
	for i := range m.marks {
		out[i] = min(seq, m.marks[i].Load())
	}
	return out
}

// get is partition part's mark.
func (m *partitionMarks) get(part int) uint64 { return m.marks[part].Load() }

// highest is the highest mark.
func (m *partitionMarks) highest() uint64 {
	var h uint64
	for i := range m.marks {
		h = max(h, m.marks[i].Load())
	}
	return h
}

// watchRoute is watcher.route over the partitioned log: the partition
// stream of the aggregate (reads gated by w) and the stored subject.
func watchRoute(l *events.PartitionedLog, w *storageWatch) func(string) (events.StreamReader, string, error) {
	return func(subject string) (events.StreamReader, string, error) {
		p, err := l.PartitionOf(subject)
		if err != nil {
			return nil, "", err
		}
		return gatedReader{StreamReader: l.Partition(p), w: w, part: p + 1}, events.StoredSubject(subject, p, l.Partitions()), nil
	}
}

// markedLog is the partitioned log recording in marks the sequence of
// every append.
type markedLog struct {
	*events.PartitionedLog
	marks *partitionMarks
}

var _ events.Log = markedLog{}

// Append implements events.Log.
func (l markedLog) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (events.AppendResult, error) {
	res, err := l.PartitionedLog.Append(ctx, subject, expectedLastSeq, msgID, data)
	if err == nil {
		if part, perr := l.PartitionOf(subject); perr == nil {
			l.marks.raise(part, res.Seq)
		}
	}
	return res, err
}

// openPartitionedLog creates or opens the K streams and marks each
// partition's last sequence.
func (n *Node) openPartitionedLog(ctx context.Context, js jetstream.JetStream, lcfg events.JetStreamConfig) (markedLog, error) {
	var plog *events.PartitionedLog
	if err := n.untilReady(ctx, fmt.Sprintf("streams %s_P0..%d", n.cfg.Stream, n.cfg.LogPartitions-1), func(ctx context.Context) (err error) {
		plog, err = events.NewPartitionedLog(ctx, js, lcfg, n.cfg.LogPartitions)
		return err
	}); err != nil {
		return markedLog{}, replicasError(n.cfg.Replicas, err)
	}
	marks := newPartitionMarks(plog.Partitions())
	for i := range plog.Partitions() {
		b, err := plog.Partition(i).Bounds(ctx)
		if err != nil {
			return markedLog{}, fmt.Errorf("node: %w", err)
		}
		marks.raise(i, b.Last)
	}
	return markedLog{PartitionedLog: plog, marks: marks}, nil
}

// checkPartitionedLog is checkLog for a log in K > 1 partitions: no
// partition half-migrated or half-compacted, none ending before the
// projection's checkpoint of it, and a projection made from K partitions.
func (n *Node) checkPartitionedLog(ctx context.Context, js jetstream.JetStream, store *projections.Store) error {
	k := n.cfg.LogPartitions
	if err := store.SetLogPartitions(k); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := events.CheckNoCompaction(ctx, js); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	for i := range k {
		name := events.PartitionStream(n.cfg.Stream, i, k)
		if err := events.CheckNotMigrating(ctx, js, name); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		applied := store.AppliedSeqOf(i)
		if _, err := projections.CheckStream(ctx, js, name, applied); err != nil &&
			(applied > 0 || !errors.Is(err, jetstream.ErrStreamNotFound)) {
			return fmt.Errorf("node: %w", err)
		}
	}
	return nil
}

// LedgerLog implements events.LedgerRouter: the stream of subject's
// partition, its appends (a removal's ledger records) marked too.
func (l markedLog) LedgerLog(subject string) (events.Log, error) {
	part, err := l.PartitionOf(subject)
	if err != nil {
		return nil, err
	}
	return markedPartition{Log: l.Partition(part), part: part, marks: l.marks}, nil
}

// markedPartition is one partition's stream recording in marks the
// sequence of every append.
type markedPartition struct {
	events.Log
	part  int
	marks *partitionMarks
}

// Append implements events.Log.
func (l markedPartition) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (events.AppendResult, error) {
	res, err := l.Log.Append(ctx, subject, expectedLastSeq, msgID, data)
	if err == nil {
		l.marks.raise(l.part, res.Seq)
	}
	return res, err
}

// partitionedReader is the inspector's reader of a log in K > 1
// partitions: no whole stream (Bounds and Read answer errPartitionedRead),
// but each aggregate's partition stream (inspector.SubjectReader) and each
// stream's removal ledger (actors.LedgerStreams, for time travel), reads
// gated by w.
var (
	_ actors.LedgerStreams    = partitionedReader{}
	_ inspector.SubjectReader = partitionedReader{}
)

type partitionedReader struct {
	gatedReader // of noWholeLog
	l           *events.PartitionedLog
}

// ReaderOf is the stream holding the logical subject.
func (r partitionedReader) ReaderOf(subject string) (events.StreamReader, error) {
	p, err := r.l.PartitionOf(subject)
	if err != nil {
		return nil, err
	}
	return gatedReader{StreamReader: r.l.Partition(p), w: r.w, part: p + 1}, nil
}

// LedgerStreams are the K streams, partition 0 first.
func (r partitionedReader) LedgerStreams() []events.StreamReader {
	out := make([]events.StreamReader, r.l.Partitions())
	for i := range out {
		out[i] = gatedReader{StreamReader: r.l.Partition(i), w: r.w, part: i + 1}
	}
	return out
}

// PartitionOf is the partition of the logical subject.
func (r partitionedReader) PartitionOf(subject string) (int, error) { return r.l.PartitionOf(subject) }
