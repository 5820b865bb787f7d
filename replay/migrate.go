package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem/events"
)

// MigrateLogConfig configures MigrateLog.
type MigrateLogConfig struct {
	Conn
	// IdleTimeout ends the command when no message of a stream arrives for
	// this long while it is read (0: 10s).
	IdleTimeout time.Duration
	// Progress receives the progress of each step (nil: none): a bar when
	// ProgressTTY, else one line about every second.
	Progress    io.Writer
	ProgressTTY bool
	// Partitions > 1 moves the log from its one stream to that many
	// partition streams instead (MigrateLogPartitions).
	Partitions int
}

// MigrateLog moves the log stream to one that allows deletes and purges,
// keeping every sequence (events.MigrateAllowDelete: copy to
// <stream>_MIGRATE, compare, delete, recreate without deny_delete and
// deny_purge, copy back, compare, delete the copy), and writes a summary to
// w. Offline: with --data-dir it holds the data dir's lock (a running
// node's directory is refused at once); with --nats-url every node must be
// stopped. Interrupted, it is run again and continues; a node refuses to
// start on a half-filled stream (events.ErrMigrating).
func MigrateLog(ctx context.Context, cfg MigrateLogConfig, w io.Writer) (events.MigrateReport, error) {
	if cfg.Partitions != 0 {
		_, err := MigrateLogPartitions(ctx, cfg, w)
		return events.MigrateReport{}, err
	}
	l, err := cfg.dial() // validates cfg; takes the data dir's lock
	if err != nil {
		return events.MigrateReport{}, err
	}
	defer l.close()
	if k, err := l.logPartitions(ctx); err == nil && k > 1 {
		return events.MigrateReport{}, migratePartitionsAllowDelete(ctx, cfg, l, k, w)
	}
	return migrateAllowDelete(ctx, cfg, l, l.stream, w)
}

// migratePartitionsAllowDelete is MigrateLog for a log in k partition
// streams: each stream in turn, partition 0's last (logPartitions reads k
// from partition 1's while partition 0's is being migrated).
func migratePartitionsAllowDelete(ctx context.Context, cfg MigrateLogConfig, l *link, k int, w io.Writer) error {
	for j := 1; j <= k; j++ {
		if _, err := migrateAllowDelete(ctx, cfg, l, events.PartitionStream(l.stream, j%k, k), w); err != nil {
			return err
		}
	}
	return nil
}

// migrateAllowDelete migrates stream to allow deletes and purges
// (events.MigrateAllowDelete) and says what it did.
func migrateAllowDelete(ctx context.Context, cfg MigrateLogConfig, l *link, stream string, w io.Writer) (events.MigrateReport, error) {
	report, finish := cfg.stepProgress()
	rep, err := events.MigrateAllowDelete(ctx, l.js, events.MigrateConfig{
		Stream:      stream,
		IdleTimeout: cfg.IdleTimeout,
		Progress:    report,
	})
	finish()
	if errors.Is(err, events.ErrNoStream) {
		return rep, fmt.Errorf("%w: %w", ErrNoStream, err)
	}
	if err != nil {
		return rep, fmt.Errorf("replay: migrate-log: %w", err)
	}
	if rep.AlreadyDone {
		_, err = fmt.Fprintf(w, "%s already allows deletes and purges (%d messages): nothing to do\n", rep.Stream, rep.Messages)
		return rep, err
	}
	if rep.Resumed != "" {
		fmt.Fprintf(w, "resumed an interrupted migration: %s\n", rep.Resumed)
	}
	_, err = fmt.Fprintf(w, "migrated %s: %d messages, seq 1..%d kept, digest %s; deny_delete and deny_purge off; temporary stream %s deleted\n",
		rep.Stream, rep.Messages, rep.Messages, rep.Digest, rep.Temp)
	return rep, err
}

// ProjectionBeforePartitions is where MigrateLogPartitions moves a data
// dir's projection file: it was made from the one stream's sequences, and
// the node makes a new one from the partitions when the file is missing.
const ProjectionBeforePartitions = ProjectionFile + ".before-partitions"

// MigrateLogPartitions moves the log from its one stream to cfg.Partitions
// streams (events.MigrateToPartitions: every message kept and compared,
// resumable, a node refuses the log until it is done), purges the actor
// snapshots, and with --data-dir moves the projection file aside
// (ProjectionBeforePartitions) so the node, started with
// --log-partitions K, projects the partitions from the start. Offline, as
// MigrateLog.
func MigrateLogPartitions(ctx context.Context, cfg MigrateLogConfig, w io.Writer) (events.PartitionMigrateReport, error) {
	if cfg.Partitions < 2 || cfg.Partitions > events.MaxLogPartitions {
		return events.PartitionMigrateReport{}, fmt.Errorf("%w: --partitions %d: 2..%d", ErrUsage, cfg.Partitions, events.MaxLogPartitions)
	}
	l, err := cfg.dial()
	if err != nil {
		return events.PartitionMigrateReport{}, err
	}
	defer l.close()
	report, finish := cfg.stepProgress()
	rep, err := events.MigrateToPartitions(ctx, l.js, events.PartitionMigrateConfig{
		Stream: l.stream, Partitions: cfg.Partitions, IdleTimeout: cfg.IdleTimeout,
		Progress: report,
	})
	finish()
	if errors.Is(err, events.ErrNoStream) {
		return rep, fmt.Errorf("%w: %w", ErrNoStream, err)
	}
	if err != nil {
		return rep, fmt.Errorf("replay: migrate-log --partitions %d: %w", cfg.Partitions, err)
	}
	if cfg.DataDir != "" {
		from := filepath.Join(cfg.DataDir, ProjectionFile)
		if err := os.Rename(from, filepath.Join(cfg.DataDir, ProjectionBeforePartitions)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("replay: migrate-log: move the projection of the one stream aside: %w", err)
		}
	}
	if rep.AlreadyDone {
		_, err = fmt.Fprintf(w, "%s is already in %d partitions (%d messages): nothing to do\n", rep.Stream, cfg.Partitions, rep.Messages)
		return rep, err
	}
	if rep.Resumed != "" {
		fmt.Fprintf(w, "resumed an interrupted migration: %s\n", rep.Resumed)
	}
	_, err = fmt.Fprintf(w, "migrated %s to %d partitions %s..%s: %d messages (per partition %v), digest %s; snapshots purged; start the nodes with --log-partitions %d (the projection is made again)\n",
		rep.Stream, cfg.Partitions, rep.Streams[0], rep.Streams[len(rep.Streams)-1], rep.Messages, rep.PerPartition, rep.Digest, cfg.Partitions)
	return rep, err
}

// stepProgress reports a migration's progress one step at a time (a new
// progress line per step); finish ends the last step's.
func (cfg MigrateLogConfig) stepProgress() (report func(events.MigrateStep, uint64, uint64), finish func()) {
	var (
		p    *progress
		step events.MigrateStep
	)
	finish = func() {
		if p != nil {
			p.finish()
		}
	}
	report = func(s events.MigrateStep, done, total uint64) {
		if s != step || p == nil {
			finish()
			step, p = s, newProgress(cfg.Progress, cfg.ProgressTTY, string(s), time.Now)
		}
		p.update(done, total)
	}
	return report, finish
}
