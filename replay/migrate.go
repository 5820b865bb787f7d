package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	l, err := cfg.dial() // validates cfg; takes the data dir's lock
	if err != nil {
		return events.MigrateReport{}, err
	}
	defer l.close()
	var (
		p    *progress
		step events.MigrateStep
	)
	finish := func() {
		if p != nil {
			p.finish()
		}
	}
	rep, err := events.MigrateAllowDelete(ctx, l.js, events.MigrateConfig{
		Stream:      l.stream,
		IdleTimeout: cfg.IdleTimeout,
		Progress: func(s events.MigrateStep, done, total uint64) {
			if s != step || p == nil {
				finish()
				step, p = s, newProgress(cfg.Progress, cfg.ProgressTTY, string(s), time.Now)
			}
			p.update(done, total)
		},
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
