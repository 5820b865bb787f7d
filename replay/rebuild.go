package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// RebuildConfig configures Rebuild.
type RebuildConfig struct {
	Conn
	// Out is the projection file to write (default <DataDir>/projection.db).
	Out string
	// IdleTimeout bounds the wait for the next message of the log
	// (projections.WithIdleTimeout; 0: projections.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Progress receives the progress (nil: none): a bar when ProgressTTY,
	// else one line about every second.
	Progress    io.Writer
	ProgressTTY bool
	// Partitions > 1 rebuilds from the log in that many partition streams
	// (node --log-partitions; projections.RebuildPartitions).
	Partitions int
}

// Rebuild replays the whole log into the projection file (written aside and
// renamed over it by projections.Rebuild: safe to interrupt and rerun) and
// writes a summary to w. The node must not be running on that file.
func Rebuild(ctx context.Context, cfg RebuildConfig, w io.Writer) (projections.RebuildStats, error) {
	if err := cfg.Validate(); err != nil {
		return projections.RebuildStats{}, err
	}
	out := cfg.projection(cfg.Out)
	if out == "" {
		return projections.RebuildStats{}, fmt.Errorf("%w: rebuild needs --out FILE or --data-dir", ErrUsage)
	}
	l, err := cfg.dial()
	if err != nil {
		return projections.RebuildStats{}, err
	}
	defer l.close()
	if cfg.Partitions > 1 {
		p := newProgress(cfg.Progress, cfg.ProgressTTY, "rebuild", time.Now)
		st, err := projections.RebuildPartitions(ctx, l.js, l.stream, cfg.Partitions, out, events.NewCodec(), p.update, projections.WithIdleTimeout(cfg.IdleTimeout))
		p.finish()
		if err != nil {
			return st, err
		}
		_, err = fmt.Fprintf(w, "rebuilt %s from %d partitions: %s\n", out, cfg.Partitions, describeRebuild(st))
		return st, err
	}
	if _, err := l.streamInfo(ctx); err != nil { // a missing stream is ErrNoStream
		return projections.RebuildStats{}, err
	}
	st, err := rebuildInto(ctx, l, out, cfg.IdleTimeout, newProgress(cfg.Progress, cfg.ProgressTTY, "rebuild", time.Now))
	if err != nil {
		return st, err
	}
	_, err = fmt.Fprintf(w, "rebuilt %s: %s\n", out, describeRebuild(st))
	return st, err
}

// rebuildInto rebuilds path from l's stream. The caller read the stream's
// info first (l.streamInfo: a missing stream is ErrNoStream).
func rebuildInto(ctx context.Context, l *link, path string, idle time.Duration, p *progress, opts ...projections.RebuildOption) (projections.RebuildStats, error) {
	st, err := projections.Rebuild(ctx, l.js, l.stream, path, events.NewCodec(), p.update, append(opts, projections.WithIdleTimeout(idle))...)
	p.finish()
	return st, err
}

func describeRebuild(st projections.RebuildStats) string {
	rate := 0.0
	if st.Duration > 0 {
		rate = float64(st.Events) / st.Duration.Seconds()
	}
	return fmt.Sprintf("%d events in %d batches, %s, %.0f events/s, checkpoint seq %d",
		st.Events, st.Batches, st.Duration.Round(time.Millisecond), rate, st.LastSeq)
}

// VerifyConfig configures Verify.
type VerifyConfig struct {
	Conn
	// Projection is the live file (default <DataDir>/projection.db).
	Projection string
	// IdleTimeout: see RebuildConfig.
	IdleTimeout time.Duration
	Progress    io.Writer
	ProgressTTY bool
}

// VerifyResult is what Verify found.
type VerifyResult struct {
	// Differences has one line per bucket that differs (projections.VerifyDigests).
	Differences []string
	// LiveSeq and RebuiltSeq are the two files' checkpoints; LogSeq is the
	// log's last sequence. The rebuild stops at LiveSeq (or at the log's
	// end, if that comes first).
	LiveSeq, RebuiltSeq, LogSeq uint64
	Rebuild                     projections.RebuildStats
}

// Verify rebuilds the projection from the log into a temporary directory
// beside the live file, compares the digest of every bucket with the live
// file's, prints the differences and removes the temporary file.
//
// A live projection whose checkpoint is before the log's end (a node
// stopped before its projector caught up, or a node that was killed) is
// compared with the log up to that checkpoint: identical, it is only
// behind, and Verify returns an error wrapping ErrBehind ("BEHIND by N",
// exit status 4); the node's projector applies the rest when it runs.
// Otherwise any difference returns an error wrapping ErrDiffers
// ("DIFFERS", exit status 1). The live file must not be open by a running
// node (bbolt's lock; Open gives up after 5 s).
func Verify(ctx context.Context, cfg VerifyConfig, w io.Writer) (*VerifyResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	live := cfg.projection(cfg.Projection)
	if live == "" {
		return nil, fmt.Errorf("%w: verify needs --projection FILE or --data-dir", ErrUsage)
	}
	if _, err := os.Stat(live); err != nil {
		return nil, fmt.Errorf("replay: verify: live projection: %w", err)
	}
	// Dial first: with --data-dir it takes the lock, so a running node is
	// named at once rather than found by bbolt's 5 s timeout on its file.
	l, err := cfg.dial()
	if err != nil {
		return nil, err
	}
	defer l.close()
	res := &VerifyResult{}
	liveDigest, liveSeq, err := digest(live)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: live projection (is a node running on it?): %w", err)
	}
	res.LiveSeq = liveSeq
	info, err := l.streamInfo(ctx)
	if err != nil {
		return nil, err
	}
	res.LogSeq = info.State.LastSeq
	// Always bounded by the live checkpoint: the log may grow while this
	// runs (other nodes writing), and a rebuild past liveSeq would differ.
	upTo := projections.WithUpTo(liveSeq)

	tmpDir, err := os.MkdirTemp(filepath.Dir(live), ".verify-")
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	aside := filepath.Join(tmpDir, ProjectionFile)
	if res.Rebuild, err = rebuildInto(ctx, l, aside, cfg.IdleTimeout, newProgress(cfg.Progress, cfg.ProgressTTY, "verify: rebuild", time.Now), upTo); err != nil {
		return nil, err
	}
	rebuiltDigest, rebuiltSeq, err := digest(aside)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: rebuilt projection: %w", err)
	}
	res.RebuiltSeq = rebuiltSeq
	res.Differences = projections.VerifyDigests(liveDigest, rebuiltDigest)

	fmt.Fprintf(w, "rebuilt from the log: %s\n", describeRebuild(res.Rebuild))
	fmt.Fprintf(w, "checkpoints: live %s applied seq %d, rebuilt seq %d, log ends at seq %d\n", live, res.LiveSeq, res.RebuiltSeq, res.LogSeq)
	behind := res.LogSeq - min(res.LiveSeq, res.LogSeq)
	switch {
	case len(res.Differences) == 0 && behind == 0:
		_, err := fmt.Fprintf(w, "OK: %d buckets identical\n", len(liveDigest))
		return res, err
	case len(res.Differences) == 0:
		_, err := fmt.Fprintf(w, "BEHIND by %d: the live projection is identical to the log up to its checkpoint seq %d; the log ends at seq %d (the node's projector applies the rest when it runs; or rebuild)\n",
			behind, res.LiveSeq, res.LogSeq)
		if err != nil {
			return res, err
		}
		return res, fmt.Errorf("%w by %d sequences (%s at seq %d, log at %d)", ErrBehind, behind, live, res.LiveSeq, res.LogSeq)
	}
	fmt.Fprintf(w, "DIFFERS: %d of %d buckets\n", len(res.Differences), max(len(liveDigest), len(rebuiltDigest)))
	for _, d := range res.Differences {
		fmt.Fprintf(w, "  %s\n", d)
	}
	switch {
	case behind > 0:
		fmt.Fprintf(w, "note: compared with the log up to the live checkpoint seq %d (the log ends at %d): the projection differs from what it applied, not only lags\n", res.LiveSeq, res.LogSeq)
	case res.LiveSeq > res.LogSeq:
		fmt.Fprintf(w, "note: the live projection's checkpoint %d is past the log's end %d: the log lost messages (deleted, truncated, an older copy restored)\n", res.LiveSeq, res.LogSeq)
	}
	return res, fmt.Errorf("%w: %d buckets (%s)", ErrDiffers, len(res.Differences), live)
}

// digest opens a projection file, reads its digests and checkpoint, closes it.
func digest(path string) (map[string]string, uint64, error) {
	s, err := projections.Open(path)
	if err != nil {
		return nil, 0, err
	}
	d, err := s.Digest()
	seq := s.AppliedSeq()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return d, seq, err
}

// projectionStat reads a projection file's size and checkpoint without
// creating it when missing.
func projectionStat(path string, logLast uint64) (*ProjectionStat, error) {
	p := &ProjectionStat{Path: path}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replay: projection: %w", err)
	}
	p.Exists, p.Bytes = true, fi.Size()
	s, err := projections.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: projection (is a node running on it?): %w", err)
	}
	p.AppliedSeq = s.AppliedSeq()
	if err := s.Close(); err != nil {
		return nil, fmt.Errorf("replay: projection: %w", err)
	}
	if logLast > p.AppliedSeq {
		p.Lag = logLast - p.AppliedSeq
	}
	return p, nil
}
