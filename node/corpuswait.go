package node

import (
	"context"
)

// The waits of corpusReadModel act on the local files: each reads the
// whole log, so they together are this node's position (the least of
// their checkpoints: what every local file applied). With no local file
// they fail with a 503.

// WaitFor waits until every local file applied seq (readModel.WaitFor).
func (r *corpusReadModel) WaitFor(ctx context.Context, seq uint64) error {
	files := r.files()
	if len(files) == 0 {
		return errNoCorpusFile
	}
	for _, f := range files {
		if err := r.readModelOf(f).WaitFor(ctx, seq); err != nil {
			return err
		}
	}
	return nil
}

// WaitForAll waits until every local file applied ends[i] in each log
// partition i.
func (r *corpusReadModel) WaitForAll(ctx context.Context, ends []uint64) error {
	files := r.files()
	if len(files) == 0 {
		return errNoCorpusFile
	}
	for _, f := range files {
		if err := f.p.WaitForAll(ctx, ends); err != nil {
			return err
		}
	}
	return nil
}

// Partitions is the number of log partitions the files read.
func (r *corpusReadModel) Partitions() int {
	if r.marks == nil {
		return 1
	}
	return len(r.marks.marks)
}

// AppliedSeq is the least local file's AppliedSeq (0 with none).
func (r *corpusReadModel) AppliedSeq() uint64 {
	return r.least(func(f corpusFile) uint64 { return f.p.AppliedSeq() })
}

// AppliedSeqOf is the least local file's checkpoint of log partition part
// (0 with none).
func (r *corpusReadModel) AppliedSeqOf(part int) uint64 {
	return r.least(func(f corpusFile) uint64 { return f.p.AppliedSeqOf(part) })
}

func (r *corpusReadModel) least(of func(corpusFile) uint64) uint64 {
	files := r.files()
	if len(files) == 0 {
		return 0
	}
	out := of(files[0])
	for _, f := range files[1:] {
		out = min(out, of(f))
	}
	return out
}

// LogEndOf is readModel.LogEndOf read through any local file.
func (r *corpusReadModel) LogEndOf(ctx context.Context, part int, seq uint64) (uint64, error) {
	f, ok := r.local.Any()
	if !ok {
		return 0, errNoCorpusFile
	}
	return r.readModelOf(f).LogEndOf(ctx, part, seq)
}

// LogEnd is readModel.LogEnd read through any local file.
func (r *corpusReadModel) LogEnd(ctx context.Context) (uint64, error) {
	f, ok := r.local.Any()
	if !ok {
		return 0, errNoCorpusFile
	}
	return r.readModelOf(f).LogEnd(ctx)
}
