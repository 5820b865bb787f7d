package projections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// rebuildBatch is the number of records per transaction during Rebuild.
const rebuildBatch = 256

// RebuildStats describes a finished Rebuild.
type RebuildStats struct {
	// Events is the number of log records (EventBatch messages) applied.
	Events uint64
	// Batches is the number of transactions committed.
	Batches  uint64
	Duration time.Duration
	// LastSeq is the stream sequence the rebuilt file is checkpointed at.
	LastSeq uint64
}

// Rebuild replays the whole stream, up to its last sequence read at the
// start, into a new file path+".rebuild", fsyncs and closes it, and renames
// it over path. A ".rebuild" file left by an interrupted run is removed
// first, so Rebuild is safe to interrupt and to run again.
//
// The rename is atomic on POSIX file systems: a reader opening path sees
// the old file or the new one, never a mix; the directory is fsynced after
// the rename so the swap survives a crash. A Store already open on path
// keeps reading the old (unlinked) file: close it and Open path again. The
// live projector must not run on path while Rebuild runs (bbolt's file lock
// is on the old inode, not on the name).
//
// progress, if not nil, is called after each committed batch with the
// records applied so far and the total to apply.
func Rebuild(ctx context.Context, js jetstream.JetStream, stream, path string, codec *events.Codec,
	progress func(applied, total uint64)) (RebuildStats, error) {
	began := time.Now()
	var stats RebuildStats
	tmp := path + ".rebuild"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return stats, fmt.Errorf("projections: rebuild: remove leftover %s: %w", tmp, err)
	}
	last, err := streamLastSeq(ctx, js, stream)
	if err != nil {
		return stats, err
	}
	st, err := openStore(tmp, true)
	if err != nil {
		return stats, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = st.Close()
			_ = os.Remove(tmp)
		}
	}()
	if last > 0 {
		err = consume(ctx, js, stream, codec, 1, last, rebuildBatch, 50*time.Millisecond, func(recs []Decoded) error {
			if err := st.ApplyBatch(recs); err != nil {
				return err
			}
			stats.Events += uint64(len(recs))
			stats.Batches++
			if progress != nil {
				progress(stats.Events, last)
			}
			return nil
		})
		if err != nil {
			return stats, fmt.Errorf("projections: rebuild %s: %w", path, err)
		}
	}
	stats.LastSeq = st.AppliedSeq()
	if err := st.sync(); err != nil {
		return stats, fmt.Errorf("projections: rebuild: sync %s: %w", tmp, err)
	}
	if err := st.Close(); err != nil {
		return stats, fmt.Errorf("projections: rebuild: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return stats, fmt.Errorf("projections: rebuild: rename %s over %s: %w", tmp, path, err)
	}
	ok = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return stats, fmt.Errorf("projections: rebuild: sync directory: %w", err)
	}
	stats.Duration = time.Since(began)
	return stats, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// VerifyDigests compares two Digest results (a live file and a rebuilt one)
// and returns one line per bucket that differs or is missing from either,
// sorted; nil means they hold the same read model.
func VerifyDigests(live, rebuilt map[string]string) []string {
	var out []string
	for name, l := range live {
		r, ok := rebuilt[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: missing from the rebuilt file", name))
		case r != l:
			out = append(out, fmt.Sprintf("%s: differs (live %s, rebuilt %s)", name, short(l), short(r)))
		}
	}
	for name := range rebuilt {
		if _, ok := live[name]; !ok {
			out = append(out, fmt.Sprintf("%s: missing from the live file", name))
		}
	}
	sort.Strings(out)
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
