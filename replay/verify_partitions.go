package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// verifyPartitions is Verify for a projection of a log in K > 1 partition
// streams (the live file records K: liveFile.seqs): each partition is
// rebuilt up to the live file's checkpoint for it
// (projections.WithUpToPartitions), the partitions one after the other,
// and the digests compared; they do not depend on the order the live
// projector applied the partitions in (projections.Store.Digest). BEHIND
// counts, over the partitions, the sequences each stream holds past its
// checkpoint.
func verifyPartitions(ctx context.Context, cfg VerifyConfig, l *link, live string, liveFile fileDigest, w io.Writer) (*VerifyResult, error) {
	k := len(liveFile.seqs)
	res := &VerifyResult{LiveSeqs: liveFile.seqs}
	for i := range k {
		name := events.PartitionStream(l.stream, i, k)
		s, err := l.js.Stream(ctx, name)
		if err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, fmt.Errorf("%w: %s (%s records a log in %d partitions)", ErrNoStream, name, live, k)
			}
			return nil, fmt.Errorf("replay: stream %s: %w", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay: stream %s info: %w", name, err)
		}
		res.LogSeqs = append(res.LogSeqs, info.State.LastSeq)
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(live), ".verify-")
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	aside := filepath.Join(tmpDir, ProjectionFile)
	p := newProgress(cfg.Progress, cfg.ProgressTTY, "verify: rebuild", time.Now)
	res.Rebuild, err = projections.RebuildPartitions(ctx, l.js, l.stream, k, aside, events.NewCodec(), p.update,
		projections.WithIdleTimeout(cfg.IdleTimeout), projections.WithUpToPartitions(liveFile.seqs))
	p.finish()
	if err != nil {
		return nil, err
	}
	rebuilt, err := digestFile(aside)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: rebuilt projection: %w", err)
	}
	res.RebuiltSeqs = rebuilt.seqs
	res.Differences = projections.VerifyDigests(liveFile.digest, rebuilt.digest)
	var behind uint64
	past := false
	for i := range k {
		res.LiveSeq += res.LiveSeqs[i]
		res.RebuiltSeq += res.RebuiltSeqs[i]
		res.LogSeq += res.LogSeqs[i]
		behind += res.LogSeqs[i] - min(res.LiveSeqs[i], res.LogSeqs[i])
		past = past || res.LiveSeqs[i] > res.LogSeqs[i]
	}
	fmt.Fprintf(w, "rebuilt from the log in %d partitions: %s\n", k, describeRebuild(res.Rebuild))
	fmt.Fprintf(w, "checkpoints: live %s applied %s, rebuilt %s, the log ends at %s\n",
		live, partSeqs(res.LiveSeqs), partSeqs(res.RebuiltSeqs), partSeqs(res.LogSeqs))
	return verdict(w, res, live, len(liveFile.digest), len(rebuilt.digest), behind, partSeqs(res.LiveSeqs), partSeqs(res.LogSeqs), past)
}

// partSeqs writes one sequence per partition: "p0:12,p1:40".
func partSeqs(seqs []uint64) string {
	parts := make([]string, len(seqs))
	for i, s := range seqs {
		parts[i] = fmt.Sprintf("p%d:%d", i, s)
	}
	return strings.Join(parts, ",")
}
