package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/placement"
	"github.com/nats-io/nats.go/jetstream"
)

// StatsConfig configures Stats.
type StatsConfig struct {
	Conn
	// Projection is the projection file (default <DataDir>/projection.db;
	// none without a data dir).
	Projection string
}

// StreamStat describes one stream of the server.
type StreamStat struct {
	Name              string
	Messages, Bytes   uint64
	FirstSeq, LastSeq uint64
}

// ProjectionStat describes the projection file.
type ProjectionStat struct {
	Path       string
	Exists     bool
	Bytes      int64
	AppliedSeq uint64
	// Lag is the log stream's last sequence minus AppliedSeq; for a log in
	// K > 1 partitions the sum over the partitions of each stream's last
	// sequence minus its checkpoint.
	Lag uint64
	// AppliedSeqs are the K checkpoints of a projection of a log in K > 1
	// partitions (AppliedSeq is partition 0's); nil for one stream.
	AppliedSeqs []uint64
	// OtherLayout, when > 0, is the number of streams the file was made
	// from, which is not the log's (Lag is then 0: rebuild the file).
	OtherLayout int
}

// StatsReport is what Stats measured.
type StatsReport struct {
	Streams []StreamStat
	// LogStreams are the log's streams: the one stream, or its K > 1
	// partition streams in partition order.
	LogStreams []string
	// Aggregates counts the log's distinct subjects per aggregate kind.
	Aggregates map[string]int
	Projection *ProjectionStat // nil without a projection path
	// DataDirBytes is the size of DataDir (-1 without one).
	DataDirBytes int64
	// Cluster is the placement bucket's nodes and leases (nil when no node
	// ran on this log).
	Cluster *placement.Status
}

// Stats reports the streams, the log's aggregates per kind, the projection
// file's size, applied sequence and lag, and the data directory's size.
func Stats(ctx context.Context, cfg StatsConfig, w io.Writer) (*StatsReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Projection = cfg.projection(cfg.Projection)
	rep := &StatsReport{Aggregates: map[string]int{}, DataDirBytes: -1}
	l, err := cfg.dial()
	if err != nil {
		return nil, err
	}
	err = rep.collectStreams(ctx, l)
	if err == nil {
		rep.Cluster, err = placement.ReadStatus(ctx, l.js, placement.BucketFor(l.stream))
		if errors.Is(err, placement.ErrNoBucket) {
			err = nil
		}
	}
	l.close() // before reading the files: the embedded server is stopped
	if err != nil {
		return nil, err
	}
	logLasts := make([]uint64, len(rep.LogStreams))
	for i, name := range rep.LogStreams {
		for _, s := range rep.Streams {
			if s.Name == name {
				logLasts[i] = s.LastSeq
			}
		}
	}
	if cfg.Projection != "" {
		p, err := projectionStat(cfg.Projection, logLasts)
		if err != nil {
			return nil, err
		}
		rep.Projection = p
	}
	if cfg.DataDir != "" {
		if rep.DataDirBytes, err = dirSize(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("replay: size of %s: %w", cfg.DataDir, err)
		}
	}
	return rep, rep.write(w)
}

// collectStreams reads every stream, and the aggregates of the log's: the
// one stream, or K > 1 partition streams (K read from their metadata).
func (rep *StatsReport) collectStreams(ctx context.Context, l *link) error {
	k, err := l.logPartitions(ctx)
	if err != nil {
		return err
	}
	logPart := map[string]int{} // log stream → its partition
	for i := range k {
		name := events.PartitionStream(l.stream, i, k)
		rep.LogStreams = append(rep.LogStreams, name)
		logPart[name] = i
	}
	names := l.js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := l.js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("replay: stream %s: %w", name, err)
		}
		part, isLog := logPart[name]
		var opts []jetstream.StreamInfoOpt
		if isLog {
			opts = append(opts, jetstream.WithSubjectFilter(events.PartitionSubjects(part, k)))
		}
		info, err := s.Info(ctx, opts...)
		if err != nil {
			return fmt.Errorf("replay: stream %s info: %w", name, err)
		}
		rep.Streams = append(rep.Streams, StreamStat{
			Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes,
			FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq,
		})
		if isLog {
			for subj := range info.State.Subjects {
				kind, err := aggregateKind(subj, k)
				if err != nil {
					kind = "(invalid)"
				}
				rep.Aggregates[kind]++
			}
		}
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return fmt.Errorf("replay: list streams: %w", err)
	}
	slices.SortFunc(rep.Streams, func(a, b StreamStat) int { return strings.Compare(a.Name, b.Name) })
	for _, name := range rep.LogStreams {
		if !slices.ContainsFunc(rep.Streams, func(s StreamStat) bool { return s.Name == name }) {
			return fmt.Errorf("%w: %s", ErrNoStream, name)
		}
	}
	return nil
}

// aggregateKind is the kind of a stored subject of a log in k streams.
func aggregateKind(stored string, k int) (string, error) {
	if k == 1 {
		kind, _, err := events.ParseSubject(stored)
		return kind, err
	}
	_, kind, _, err := events.ParseStoredSubject(stored)
	return kind, err
}

func (rep *StatsReport) write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("streams:\n")
	for _, s := range rep.Streams {
		mark := ""
		if slices.Contains(rep.LogStreams, s.Name) {
			mark = " (log)"
		}
		fmt.Fprintf(&b, "  %s%s: %d messages, %s, seq %d..%d\n", s.Name, mark, s.Messages, humanBytes(s.Bytes), s.FirstSeq, s.LastSeq)
	}
	kinds := make([]string, 0, len(rep.Aggregates))
	total := 0
	for k, n := range rep.Aggregates {
		kinds = append(kinds, k)
		total += n
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "aggregates: %d\n", total)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %s: %d\n", k, rep.Aggregates[k])
	}
	if p := rep.Projection; p != nil {
		switch {
		case p.Exists && p.OtherLayout > 0:
			fmt.Fprintf(&b, "projection %s: %s, made from a log in %d streams, the log is in %d (rebuild it)\n", p.Path, humanBytes(uint64(p.Bytes)), p.OtherLayout, len(rep.LogStreams))
		case p.Exists && p.AppliedSeqs != nil:
			fmt.Fprintf(&b, "projection %s: %s, applied %s, lag %d\n", p.Path, humanBytes(uint64(p.Bytes)), partSeqs(p.AppliedSeqs), p.Lag)
		case p.Exists:
			fmt.Fprintf(&b, "projection %s: %s, applied seq %d, lag %d\n", p.Path, humanBytes(uint64(p.Bytes)), p.AppliedSeq, p.Lag)
		default:
			fmt.Fprintf(&b, "projection %s: missing (run `replay rebuild`)\n", p.Path)
		}
	}
	if rep.DataDirBytes >= 0 {
		fmt.Fprintf(&b, "data dir: %s\n", humanBytes(uint64(rep.DataDirBytes)))
	}
	if rep.Cluster != nil {
		rep.writeCluster(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (a temp file)
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
