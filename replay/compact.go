package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// CompactConfig configures Compact.
type CompactConfig struct {
	Conn
	// Streams to compact (nil: events.CompactCandidates — the log, the
	// snapshot bucket, the object stores; not the placement leases).
	Streams []string
	// Projection is the bbolt file to compact (default DATA-DIR/projection.db;
	// none without a data dir).
	Projection string
	// IdleTimeout ends the command when a copy makes no progress for this
	// long (0: 10s).
	IdleTimeout time.Duration
	// Force compacts streams that look up to date too.
	Force bool
	// Progress receives the progress of each step (nil: none): a bar when
	// ProgressTTY, else one line about every second.
	Progress    io.Writer
	ProgressTTY bool
	// Observe, if set, is called with every progress report (the bbolt
	// file's as step StepCompactFile), from the calling goroutine.
	Observe func(stream string, step events.CompactStep, done, total uint64)
}

// StepCompactFile is the step of the projection file's compaction in
// progress reports.
const StepCompactFile events.CompactStep = "compact bbolt file"

// StreamCompaction is one stream's result.
type StreamCompaction struct {
	events.CompactReport
	// DirBefore and DirAfter are the sizes of the stream's directory under
	// the data dir (-1 without a data dir).
	DirBefore, DirAfter int64
	Took                time.Duration
}

// CompactResult is what Compact did.
type CompactResult struct {
	Streams []StreamCompaction
	// File is the projection file's compaction (Path "" when none).
	File projections.FileCompaction
	// DataBefore and DataAfter are the data dir's sizes (-1 without one).
	DataBefore, DataAfter int64
}

// Compact removes from the files of a stopped node every byte of content
// that was deleted: each stream is rewritten with only its held messages
// (events.CompactStream: same sequences, times and headers; resumable) and
// the projection file with only its live keys (projections.CompactFile).
// Offline: with --data-dir it holds the data dir's lock (a running node's
// directory is refused at once); with --nats-url every node must be
// stopped, and only the streams are compacted unless Projection is given.
// A summary table goes to w.
func Compact(ctx context.Context, cfg CompactConfig, w io.Writer) (CompactResult, error) {
	res := CompactResult{DataBefore: -1, DataAfter: -1}
	l, err := cfg.dial() // validates cfg; takes the data dir's lock
	if err != nil {
		return res, err
	}
	defer l.close()
	if cfg.DataDir != "" {
		if res.DataBefore, err = dirSize(cfg.DataDir); err != nil {
			return res, fmt.Errorf("replay: compact: %w", err)
		}
	}
	streams := cfg.Streams
	if len(streams) == 0 {
		if streams, err = events.CompactCandidates(ctx, l.js); err != nil {
			return res, fmt.Errorf("replay: compact: %w", err)
		}
	}
	var (
		p        *progress
		key, cur string
	)
	finish := func() {
		if p != nil {
			p.finish()
		}
	}
	report := func(s events.CompactStep, done, total uint64) {
		if cfg.Observe != nil {
			cfg.Observe(cur, s, done, total)
		}
		if k := cur + ": " + string(s); k != key || p == nil {
			finish()
			key, p = k, newProgress(cfg.Progress, cfg.ProgressTTY, k, time.Now)
		}
		p.update(done, total)
	}
	for _, name := range streams {
		cur = name
		sc := StreamCompaction{DirBefore: streamDirSize(cfg.DataDir, name)}
		began := time.Now()
		sc.CompactReport, err = events.CompactStream(ctx, l.js, name, events.CompactConfig{
			IdleTimeout: cfg.IdleTimeout, Force: cfg.Force, Progress: report,
		})
		finish()
		p = nil
		sc.Took = time.Since(began)
		sc.DirAfter = streamDirSize(cfg.DataDir, name)
		res.Streams = append(res.Streams, sc)
		if err != nil {
			if errors.Is(err, events.ErrNoStream) {
				err = fmt.Errorf("%w: %w", ErrNoStream, err)
			}
			return res, fmt.Errorf("replay: compact %s: %w (run again to resume)", name, err)
		}
	}
	if path := cfg.projection(cfg.Projection); path != "" {
		if _, serr := os.Stat(path); serr == nil {
			cur = filepath.Base(path)
			report(StepCompactFile, 0, 1)
			if res.File, err = projections.CompactFile(path); err != nil {
				return res, fmt.Errorf("replay: %w (run again)", err)
			}
			report(StepCompactFile, 1, 1)
			finish()
		} else if cfg.Projection != "" {
			return res, fmt.Errorf("replay: compact: %w", serr)
		}
	}
	if cfg.DataDir != "" {
		if res.DataAfter, err = dirSize(cfg.DataDir); err != nil {
			return res, fmt.Errorf("replay: compact: %w", err)
		}
	}
	return res, writeCompactSummary(w, res)
}

func writeCompactSummary(w io.Writer, res CompactResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stream\tmessages\tfirst..last\tdir before\tdir after\ttook\tresult")
	for _, s := range res.Streams {
		what := "compacted"
		switch {
		case s.Skipped != "":
			what = "skipped: " + s.Skipped
		case s.Resumed != "":
			what = "compacted, resumed: " + s.Resumed
		}
		fmt.Fprintf(tw, "%s\t%d\t%d..%d\t%s\t%s\t%s\t%s\n", s.Stream, s.Messages, s.First, s.Last,
			sizeOrDash(s.DirBefore), sizeOrDash(s.DirAfter), s.Took.Round(time.Millisecond), what)
	}
	if f := res.File; f.Path != "" {
		fmt.Fprintf(tw, "%s\t\t\t%s\t%s\t%s\tcompacted\n", filepath.Base(f.Path), sizeOrDash(f.Before), sizeOrDash(f.After), f.Took.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.DataBefore >= 0 {
		_, err := fmt.Fprintf(w, "data dir: %s before, %s after\n", sizeOrDash(res.DataBefore), sizeOrDash(res.DataAfter))
		return err
	}
	return nil
}

func sizeOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return humanBytes(uint64(n))
}

// streamDirSize is the size of the stream's directory in the embedded
// store under dataDir (-1 without a data dir; 0 when absent).
func streamDirSize(dataDir, stream string) int64 {
	if dataDir == "" {
		return -1
	}
	// The server keeps its streams in <store>/jetstream/<account>/streams.
	dirs, _ := filepath.Glob(filepath.Join(dataDir, JetStreamDir, "jetstream", "*", "streams", stream))
	var n int64
	for _, d := range dirs {
		if s, err := dirSize(d); err == nil {
			n += s
		}
	}
	return n
}
