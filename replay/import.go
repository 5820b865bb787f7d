package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxExportLine bounds one export line (a batch of up to 8 MiB, as JSON).
const maxExportLine = 64 << 20

// ImportConfig configures Import.
type ImportConfig struct {
	Conn
	// Replicas is used only when Import creates the stream (default 1).
	Replicas int
	// Partitions > 1 imports into the log in that many partition streams
	// (node --log-partitions), each line appended to its aggregate's
	// partition: an export of any number of partitions imports into any
	// other.
	Partitions int
}

// ImportStats counts what Import appended.
type ImportStats struct {
	Messages uint64
	Subjects int
	// FirstSeq and LastSeq are the new stream sequences of the first and
	// the last appended message.
	FirstSeq, LastSeq uint64
}

// Import appends the messages of an export (r) to an empty stream, creating
// it if needed: same subjects, same order, same batches. Each append carries
// the subject's expected last sequence (as Import wrote it) and Nats-Msg-Id
// "<kind>.<id>.<command id>", the id a node uses (the command id scoped by
// the aggregate). It refuses a stream that already holds messages
// (ErrStreamNotEmpty): to retry an interrupted import, delete the stream and
// import again. Stream sequences are the new stream's, not the export's (see
// the package doc).
func Import(ctx context.Context, cfg ImportConfig, r io.Reader) (ImportStats, error) {
	var st ImportStats
	l, err := cfg.dial() // validates cfg
	if err != nil {
		return st, err
	}
	defer l.close()

	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = l.stream
	if cfg.Replicas > 0 {
		lcfg.Replicas = cfg.Replicas
	}
	if cfg.Partitions > 1 {
		return importPartitioned(ctx, l, lcfg, cfg.Partitions, r)
	}
	info, err := l.streamInfo(ctx)
	switch {
	case errors.Is(err, ErrNoStream):
		// created below by NewJetStreamLog
	case err != nil:
		return st, err
	default:
		if info.State.Msgs > 0 {
			return st, fmt.Errorf("%w: %s holds %d messages (seq %d..%d); import only into an empty stream",
				ErrStreamNotEmpty, l.stream, info.State.Msgs, info.State.FirstSeq, info.State.LastSeq)
		}
		// Keep the existing stream's settings: NewJetStreamLog updates the
		// stream to its config.
		lcfg.Replicas = max(info.Config.Replicas, 1)
		lcfg.Storage = info.Config.Storage
		if info.Config.Duplicates > 0 {
			lcfg.DuplicateWindow = info.Config.Duplicates
		}
	}
	log, err := events.NewJetStreamLog(ctx, l.js, lcfg)
	if err != nil {
		return st, err
	}
	return importLines(ctx, log, r)
}

// importPartitioned is Import into the k partition streams of l's log,
// each of which must be empty (created if missing).
func importPartitioned(ctx context.Context, l *link, lcfg events.JetStreamConfig, k int, r io.Reader) (ImportStats, error) {
	log, err := events.NewPartitionedLog(ctx, l.js, lcfg, k)
	if err != nil {
		return ImportStats{}, err
	}
	for i := range k {
		b, err := log.Partition(i).Bounds(ctx)
		if err != nil {
			return ImportStats{}, err
		}
		if b.Msgs > 0 {
			return ImportStats{}, fmt.Errorf("%w: %s holds %d messages; import only into empty streams", ErrStreamNotEmpty, log.Streams()[i], b.Msgs)
		}
	}
	return importLines(ctx, log, r)
}

// importLines appends the lines of r to log (see Import). Sequences must
// increase within each partition of the export (a line without a partition
// is of partition 0).
func importLines(ctx context.Context, log events.Log, r io.Reader) (ImportStats, error) {
	var st ImportStats
	last := map[string]uint64{} // subject -> its last sequence in the new stream
	prevSeq := map[int]uint64{} // export partition -> its last sequence
	prevPart := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxExportLine)
	uo := protojson.UnmarshalOptions{}
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		text := sc.Bytes()
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var line ExportLine
		if err := json.Unmarshal(text, &line); err != nil {
			return st, fmt.Errorf("%w: line %d: %v", ErrBadExport, n, err)
		}
		part := 0
		if line.Partition != nil {
			part = *line.Partition
		}
		if part < prevPart {
			return st, fmt.Errorf("%w: line %d: partition %d after partition %d: partitions must come in order", ErrBadExport, n, part, prevPart)
		}
		if line.Seq <= prevSeq[part] {
			return st, fmt.Errorf("%w: line %d: seq %d after seq %d: lines must be in stream order", ErrBadExport, n, line.Seq, prevSeq[part])
		}
		prevPart, prevSeq[part] = part, line.Seq
		kind, id, err := events.ParseSubject(line.Subject)
		if err != nil {
			return st, fmt.Errorf("%w: line %d: %w", ErrBadExport, n, err)
		}
		var data []byte
		switch {
		case len(line.Batch) > 0:
			b := new(memoryv1.EventBatch)
			if err := uo.Unmarshal(line.Batch, b); err != nil {
				return st, fmt.Errorf("%w: line %d (seq %d): batch: %v", ErrBadExport, n, line.Seq, err)
			}
			if data, err = events.EncodeBatch(b); err != nil {
				return st, fmt.Errorf("%w: line %d (seq %d): %w", ErrBadExport, n, line.Seq, err)
			}
		case len(line.Data) > 0:
			data = line.Data
		default:
			return st, fmt.Errorf("%w: line %d (seq %d): neither batch nor data", ErrBadExport, n, line.Seq)
		}
		b, err := events.DecodeBatch(data)
		if err != nil {
			return st, fmt.Errorf("%w: line %d (seq %d): %w", ErrBadExport, n, line.Seq, err)
		}
		if (b.GetAggregateKind() != "" && b.GetAggregateKind() != kind) || (b.GetAggregateId() != "" && b.GetAggregateId() != id) {
			return st, fmt.Errorf("%w: line %d (seq %d): batch of %s.%s on subject %s", ErrBadExport, n, line.Seq, b.GetAggregateKind(), b.GetAggregateId(), line.Subject)
		}
		msgID := ""
		if c := b.GetCommandId(); c != "" {
			msgID = kind + "." + id + "." + c
		}
		res, err := log.Append(ctx, line.Subject, last[line.Subject], msgID, data)
		if err != nil {
			return st, fmt.Errorf("replay: import line %d (seq %d, %s): %w", n, line.Seq, line.Subject, err)
		}
		if res.Duplicate {
			return st, fmt.Errorf("replay: import line %d (seq %d, %s): command %q was already stored at seq %d: %w",
				n, line.Seq, line.Subject, b.GetCommandId(), res.Seq, ErrStreamNotEmpty)
		}
		if st.FirstSeq == 0 {
			st.FirstSeq = res.Seq
		}
		st.LastSeq = max(st.LastSeq, res.Seq)
		last[line.Subject] = res.Seq
		st.Messages++
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("%w: read: %v", ErrBadExport, err)
	}
	st.Subjects = len(last)
	return st, nil
}
