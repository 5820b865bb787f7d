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
	// (node --log-partitions; projections.RebuildPartitions); 0 reads it
	// from the streams, another number than theirs is refused.
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
	if cfg.Partitions, err = l.partitionsOf(ctx, cfg.Partitions); err != nil {
		return projections.RebuildStats{}, err
	}
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
	// LiveSeqs, RebuiltSeqs and LogSeqs are, for a projection of a log in
	// K > 1 partitions, the same per partition stream (LiveSeq, RebuiltSeq
	// and LogSeq are then their sums); nil for one stream.
	LiveSeqs, RebuiltSeqs, LogSeqs []uint64
	Rebuild                        projections.RebuildStats
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
// node (bbolt's lock; Open gives up after 5 s). A projection of a log in
// K > 1 partitions (the file records K) is compared partition by
// partition (verifyPartitions).
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
	liveFile, err := digestFile(live)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: live projection (is a node running on it?): %w", err)
	}
	if len(liveFile.seqs) > 1 {
		return verifyPartitions(ctx, cfg, l, live, liveFile, w)
	}
	liveDigest, liveSeq := liveFile.digest, liveFile.seq
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
	rebuilt, err := digestFile(aside)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: rebuilt projection: %w", err)
	}
	res.RebuiltSeq = rebuilt.seq
	res.Differences = projections.VerifyDigests(liveDigest, rebuilt.digest)

	fmt.Fprintf(w, "rebuilt from the log: %s\n", describeRebuild(res.Rebuild))
	fmt.Fprintf(w, "checkpoints: live %s applied seq %d, rebuilt seq %d, log ends at seq %d\n", live, res.LiveSeq, res.RebuiltSeq, res.LogSeq)
	behind := res.LogSeq - min(res.LiveSeq, res.LogSeq)
	at := func(seq uint64) string { return fmt.Sprintf("seq %d", seq) }
	return verdict(w, res, live, len(liveDigest), len(rebuilt.digest), behind, at(res.LiveSeq), at(res.LogSeq), res.LiveSeq > res.LogSeq)
}

// verdict prints and returns Verify's outcome: OK, BEHIND (identical up to
// the live checkpoint liveAt, behind sequences short of the log's end
// logAt) or DIFFERS (past: a live checkpoint is past its log's end).
func verdict(w io.Writer, res *VerifyResult, live string, nLive, nRebuilt int, behind uint64, liveAt, logAt string, past bool) (*VerifyResult, error) {
	switch {
	case len(res.Differences) == 0 && behind == 0:
		_, err := fmt.Fprintf(w, "OK: %d buckets identical\n", nLive)
		return res, err
	case len(res.Differences) == 0:
		_, err := fmt.Fprintf(w, "BEHIND by %d: the live projection is identical to the log up to its checkpoint %s; the log ends at %s (the node's projector applies the rest when it runs; or rebuild)\n",
			behind, liveAt, logAt)
		if err != nil {
			return res, err
		}
		return res, fmt.Errorf("%w by %d sequences (%s at %s, log at %s)", ErrBehind, behind, live, liveAt, logAt)
	}
	fmt.Fprintf(w, "DIFFERS: %d of %d buckets\n", len(res.Differences), max(nLive, nRebuilt))
	for _, d := range res.Differences {
		fmt.Fprintf(w, "  %s\n", d)
	}
	switch {
	case behind > 0:
		fmt.Fprintf(w, "note: compared with the log up to the live checkpoint %s (the log ends at %s): the projection differs from what it applied, not only lags\n", liveAt, logAt)
	case past:
		fmt.Fprintf(w, "note: the live projection's checkpoint %s is past the log's end %s: the log lost messages (deleted, truncated, an older copy restored)\n", liveAt, logAt)
	}
	return res, fmt.Errorf("%w: %d buckets (%s)", ErrDiffers, len(res.Differences), live)
}

// fileDigest is a projection file's digests and checkpoints.
type fileDigest struct {
	digest map[string]string
	seq    uint64   // AppliedSeq (partition 0's)
	seqs   []uint64 // each partition's checkpoint (one for one stream)
}

// digestFile opens a projection file, reads its digests and checkpoints,
// closes it.
func digestFile(path string) (fileDigest, error) {
	s, err := projections.Open(path)
	if err != nil {
		return fileDigest{}, err
	}
	var f fileDigest
	f.digest, err = s.Digest()
	f.seq = s.AppliedSeq()
	for i := range s.LogPartitions() {
		f.seqs = append(f.seqs, s.AppliedSeqOf(i))
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return f, err
}

// projectionStat reads a projection file's size and checkpoints without
// creating it when missing; logLasts are the log's streams' last sequences
// (one, or one per partition).
func projectionStat(path string, logLasts []uint64) (*ProjectionStat, error) {
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
	applied := []uint64{p.AppliedSeq}
	if k := s.LogPartitions(); k > 1 {
		applied = make([]uint64, k)
		for i := range k {
			applied[i] = s.AppliedSeqOf(i)
		}
		p.AppliedSeqs = applied
	}
	if err := s.Close(); err != nil {
		return nil, fmt.Errorf("replay: projection: %w", err)
	}
	if len(applied) != len(logLasts) {
		p.OtherLayout = len(applied)
		return p, nil
	}
	for i, last := range logLasts {
		if last > applied[i] {
			p.Lag += last - applied[i]
		}
	}
	return p, nil
}

// digest is digestFile's digests and AppliedSeq.
func digest(path string) (map[string]string, uint64, error) {
	f, err := digestFile(path)
	return f.digest, f.seq, err
}
