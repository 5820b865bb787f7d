package projections

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// CompactSuffix names the file CompactFile writes beside the projection
// before it renames it over: <file>.compact. A leftover one (an
// interrupted run) is removed by the next CompactFile.
const CompactSuffix = ".compact"

// compactTxBytes bounds the bytes bbolt.Compact copies per transaction.
const compactTxBytes = 64 << 20

// FileCompaction says what CompactFile did.
type FileCompaction struct {
	Path          string
	Before, After int64 // file sizes in bytes
	Took          time.Duration
}

// CompactFile rewrites the bbolt file at path with only its live keys
// (bbolt.Compact into <path>.compact, fsynced, renamed over path, the
// directory fsynced). bbolt reuses freed pages but never clears them: a
// deleted key's value stays in the file until its page is written again;
// the new file holds none of them. The file must not be open (a node holds
// it locked: stop it; Open's lock timeout applies). Interrupted before the
// rename, path is untouched and the leftover is removed by the next run;
// after it, the new file is complete.
func CompactFile(path string) (FileCompaction, error) {
	began := time.Now()
	res := FileCompaction{Path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("projections: compact %s: %w", path, err)
	}
	res.Before = fi.Size()
	tmp := path + CompactSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("projections: compact: remove leftover %s: %w", tmp, err)
	}
	opts := boltOptions()
	opts.ReadOnly = true
	src, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return res, fmt.Errorf("projections: compact: open %s: %w", path, err)
	}
	defer src.Close()
	dopts := boltOptions()
	dopts.NoSync = true // fsynced once, below
	dst, err := bolt.Open(tmp, fi.Mode().Perm(), dopts)
	if err != nil {
		return res, fmt.Errorf("projections: compact: create %s: %w", tmp, err)
	}
	fail := func(err error) (FileCompaction, error) {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return res, fmt.Errorf("projections: compact %s: %w", path, err)
	}
	if err := bolt.Compact(dst, src, compactTxBytes); err != nil {
		return fail(err)
	}
	if err := dst.Sync(); err != nil {
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("projections: compact %s: %w", path, err)
	}
	_ = src.Close()
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("projections: compact: rename %s: %w", tmp, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return res, fmt.Errorf("projections: compact %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		res.After = fi.Size()
	}
	res.Took = time.Since(began)
	return res, nil
}
