package replay

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
)

// Usage is the command's help text.
const Usage = `usage: replay <command> [flags]

Connection (every command): --nats-url URL [--nats-creds FILE] to use a
running NATS, or --data-dir DIR of a STOPPED node (an embedded server is
started on DIR/jetstream for the duration of the command, holding DIR's
lock: the DIR of a running node is refused at once); --stream NAME
(default MEM). Flags may also come from AGENTMEM_<FLAG> variables, as for
the node.

commands:
  rebuild [--out FILE] [--idle-timeout 10s] [--partitions K]
        replay the whole log into a new projection file, then swap it in
        (default DIR/projection.db); progress and rate on stderr. Safe to
        interrupt and run again. A log that is not whole (missing stream, a
        gap, a purged head) is refused; no message for --idle-timeout while
        the log is read ends the command with the reason. --partitions K
        reads the log in K partition streams (node --log-partitions K).
  verify [--projection FILE] [--idle-timeout 10s]
        rebuild into a temporary file beside the live projection (as
        rebuild) and compare the digests of every bucket. A projection
        whose checkpoint is before the log's end is compared with the log
        up to that checkpoint: identical, it prints "BEHIND by N" and exits
        4 (it lags, the node's projector catches up when it runs); any
        difference prints "DIFFERS" and exits 1. A projection of a log in
        K partitions (the file records K) is compared with the K streams,
        each up to its own checkpoint.
  inspect session <id> [--at-seq N | --at-time RFC3339] [--json]
        the session as it was after the last of its batches at or before
        stream sequence N (or command time T; default: the latest): its
        layers and the exact context an LLM was sent then. A point before
        what the log keeps (compacted or erased away) exits 5 and names
        the earliest point that can be inspected. With the log in K
        partitions (K read from the streams) the session is read from its
        partition's stream, whose sequences N names.
  export [--out FILE|-] [--partitions K]
        the stream as JSON lines, one per message, in stream order:
        {"seq","subject","time","batch": protojson EventBatch}; with
        --partitions K each stream in turn, lines with "partition".
  import [--in FILE|-] [--replicas N] [--partitions K]
        append an export to an EMPTY stream (created if missing), same
        subjects and order; stream sequences are the new stream's. With
        --partitions K into K empty partition streams, each line to its
        aggregate's (an export of any layout).
  migrate-log [--idle-timeout 10s]
        OFFLINE (stop every node): move the log to a stream that allows
        deletes and purges (needed for erasure), keeping every sequence:
        copy to STREAM_MIGRATE, compare message by message, delete the
        stream, recreate it with the same settings but deny_delete and
        deny_purge off, copy back (seq i at seq i), compare and check the
        digest, delete the copy. Needs free space for a second copy of the
        log. Interrupted, run it again: it continues where it stopped.
  migrate-log --partitions K [--idle-timeout 10s]
        OFFLINE: move the log from its one stream to K streams
        STREAM_P0..STREAM_P<K-1> (node --log-partitions K), every message
        kept in its aggregate's order and compared; new sequences. Purges
        the actor snapshots and, with --data-dir, moves projection.db to
        projection.db.before-partitions (the node projects again). Refused
        while a removal is pending. Interrupted, run it again.
  compact [--streams A,B] [--projection FILE] [--force] [--idle-timeout 10s]
        OFFLINE (stop every node): remove from the files every byte of
        content that was deleted (purged subjects, deleted messages,
        replaced snapshots, deleted objects, deleted projection keys).
        Each stream (default: every stream but the placement leases) is
        copied by a JetStream mirror to COMPACT_<stream> (held messages
        only, same sequences, times and headers), compared, deleted,
        mirrored back, compared, and the copy deleted; then the projection
        file is rewritten with its live keys (bbolt compact, fsync, rename).
        A stream with nothing removed, or unchanged since its last
        compaction, is skipped (--force: not). Needs free space for a
        second copy of the largest stream. Interrupted (even kill -9), run
        it again: it resumes; a node refuses a half-compacted stream.
  stats [--projection FILE]
        streams, aggregates per kind, projection size/applied seq/lag, data
        directory size. With the log in K partitions (K read from the
        streams) its K streams, and the projection's K checkpoints.
` + namespaceUsage + `
exit status: 0 ok, 1 failure or verify found differences, 2 usage error,
3 the log cannot be read whole (stream missing, a gap, a purged head, or
reading stalled), 4 verify found the projection behind the log and
otherwise identical, 5 inspect's --at-seq/--at-time is before what the log
keeps (outside the time-travel window; the message names the earliest
point).
`

// ExitCode maps the error of Run to the process exit status.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	case errors.Is(err, ErrNoStream), errors.Is(err, projections.ErrStreamNotFound),
		errors.Is(err, projections.ErrLogGap), errors.Is(err, projections.ErrLogTruncated),
		errors.Is(err, projections.ErrLogStalled):
		return 3
	case errors.Is(err, ErrBehind):
		return 4
	case errors.Is(err, ErrOutsideWindow):
		return 5
	default:
		return 1
	}
}

// Run parses args (without the program name) and runs the command. Reports
// go to stdout, progress and notes to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := run(ctx, args, stdout, stderr)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// errHelpShown ends a command whose flags asked for help (-h, --help):
// the usage was written to stdout and the exit status is 0.
var errHelpShown = errors.New("help shown")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command given\n\n%s", ErrUsage, Usage)
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-version":
		_, err := fmt.Fprintln(stdout, "agentmem-replay", version.Version)
		return err
	}
	// "replay <command> --help" is a request for help, not a usage error.
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			_, err := io.WriteString(stdout, Usage)
			return err
		}
	}
	fs := flag.NewFlagSet("replay "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var conn Conn
	fs.StringVar(&conn.NATSURL, "nats-url", "", "use this running NATS")
	fs.StringVar(&conn.NATSCreds, "nats-creds", "", "NATS credentials file")
	fs.StringVar(&conn.DataDir, "data-dir", "", "data directory of a stopped node")
	fs.StringVar(&conn.Stream, "stream", "MEM", "JetStream stream name")

	parse := func() ([]string, error) {
		pos, err := parseInterleaved(fs, args)
		if errors.Is(err, flag.ErrHelp) {
			if _, werr := io.WriteString(stdout, Usage); werr != nil {
				return nil, werr
			}
			return nil, errHelpShown
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v\n\n%s", ErrUsage, cmd, err, Usage)
		}
		if err := node.ApplyEnv(fs, os.Getenv); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return pos, nil
	}
	// parseNoArgs is parse for the commands that take no positional argument.
	parseNoArgs := func() error {
		pos, err := parse()
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return fmt.Errorf("%w: %s takes no argument, got %q", ErrUsage, cmd, strings.Join(pos, " "))
		}
		return nil
	}
	progress, tty := stderr, isTerminal(stderr)

	switch cmd {
	case "rebuild":
		cfg := RebuildConfig{Progress: progress, ProgressTTY: tty}
		fs.StringVar(&cfg.Out, "out", "", "projection file to write (default DATA-DIR/projection.db)")
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", projections.DefaultIdleTimeout, "give up when no message of the log arrives for this long")
		fs.IntVar(&cfg.Partitions, "partitions", 0, "the log is in this many partition streams (node --log-partitions; default: read from the streams)")
		if err := parseNoArgs(); err != nil {
			return err
		}
		cfg.Conn = conn
		_, err := Rebuild(ctx, cfg, stdout)
		return err
	case "verify":
		cfg := VerifyConfig{Progress: progress, ProgressTTY: tty}
		fs.StringVar(&cfg.Projection, "projection", "", "live projection file (default DATA-DIR/projection.db)")
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", projections.DefaultIdleTimeout, "give up when no message of the log arrives for this long")
		if err := parseNoArgs(); err != nil {
			return err
		}
		cfg.Conn = conn
		_, err := Verify(ctx, cfg, stdout)
		return err
	case "inspect":
		var cfg InspectConfig
		var atTime string
		fs.Uint64Var(&cfg.AtSeq, "at-seq", 0, "stream sequence to look at (default: the latest)")
		fs.StringVar(&atTime, "at-time", "", "time to look at, RFC3339 (default: the latest)")
		fs.BoolVar(&cfg.JSON, "json", false, "print protojson")
		pos, err := parse()
		if err != nil {
			return err
		}
		if len(pos) != 2 || pos[0] != "session" {
			return fmt.Errorf("%w: inspect session <id> [--at-seq N | --at-time T] [--json], got %q", ErrUsage, strings.Join(pos, " "))
		}
		if atTime != "" {
			if cfg.AtTime, err = time.Parse(time.RFC3339, atTime); err != nil {
				return fmt.Errorf("%w: --at-time %q is not RFC3339 (2006-01-02T15:04:05Z07:00)", ErrUsage, atTime)
			}
		}
		if atTime != "" && cfg.AtSeq > 0 {
			return fmt.Errorf("%w: --at-seq and --at-time exclude each other: give one", ErrUsage)
		}
		cfg.Conn, cfg.SessionID = conn, pos[1]
		return Inspect(ctx, cfg, stdout)
	case "export":
		out := fs.String("out", "-", "file to write, - for stdout")
		parts := fs.Int("partitions", 0, "the log is in this many partition streams (node --log-partitions; default: read from the streams)")
		if err := parseNoArgs(); err != nil {
			return err
		}
		w, done, err := openOut(*out, stdout)
		if err != nil {
			return err
		}
		st, err := Export(ctx, ExportConfig{Conn: conn, Partitions: *parts}, w)
		if err = done(err); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "exported %d messages (%s of batches)\n", st.Messages, humanBytes(st.Bytes))
		return nil
	case "import":
		cfg := ImportConfig{}
		in := fs.String("in", "-", "file to read, - for stdin")
		fs.IntVar(&cfg.Replicas, "replicas", 1, "replicas of the stream if import creates it")
		fs.IntVar(&cfg.Partitions, "partitions", 0, "import into the log in this many partition streams (node --log-partitions)")
		if err := parseNoArgs(); err != nil {
			return err
		}
		var r io.Reader = os.Stdin
		if *in != "-" {
			f, err := os.Open(*in)
			if err != nil {
				return fmt.Errorf("replay: import: %w", err)
			}
			defer f.Close()
			r = f
		}
		cfg.Conn = conn
		st, err := Import(ctx, cfg, r)
		if err != nil {
			return err
		}
		if cfg.Partitions > 1 {
			fmt.Fprintf(stdout, "imported %d messages on %d subjects into %d partitions of %s\n", st.Messages, st.Subjects, cfg.Partitions, conn.stream())
			return nil
		}
		fmt.Fprintf(stdout, "imported %d messages on %d subjects into %s (seq %d..%d)\n", st.Messages, st.Subjects, conn.stream(), st.FirstSeq, st.LastSeq)
		return nil
	case "migrate-log":
		cfg := MigrateLogConfig{Progress: progress, ProgressTTY: tty}
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", projections.DefaultIdleTimeout, "give up when no message of a stream arrives for this long")
		fs.IntVar(&cfg.Partitions, "partitions", 0, "move the log from its one stream to this many partition streams (node --log-partitions)")
		if err := parseNoArgs(); err != nil {
			return err
		}
		cfg.Conn = conn
		_, err := MigrateLog(ctx, cfg, stdout)
		return err
	case "compact":
		cfg := CompactConfig{Progress: progress, ProgressTTY: tty}
		streams := fs.String("streams", "", "comma-separated streams to compact (default: all but the placement leases)")
		fs.StringVar(&cfg.Projection, "projection", "", "projection file (default DATA-DIR/projection.db)")
		fs.BoolVar(&cfg.Force, "force", false, "compact streams that look up to date too")
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", projections.DefaultIdleTimeout, "give up when a copy makes no progress for this long")
		if err := parseNoArgs(); err != nil {
			return err
		}
		if *streams != "" {
			cfg.Streams = strings.Split(*streams, ",")
		}
		cfg.Conn = conn
		_, err := Compact(ctx, cfg, stdout)
		return err
	case "stats":
		cfg := StatsConfig{}
		fs.StringVar(&cfg.Projection, "projection", "", "projection file (default DATA-DIR/projection.db)")
		if err := parseNoArgs(); err != nil {
			return err
		}
		cfg.Conn = conn
		_, err := Stats(ctx, cfg, stdout)
		return err
	case "namespace":
		return runNamespace(ctx, fs, parse, &conn, stdout, stderr)
	case "help", "-h", "--help", "-help":
		_, err := io.WriteString(stdout, Usage)
		return err
	default:
		return fmt.Errorf("%w: unknown command %q\n\n%s", ErrUsage, cmd, Usage)
	}
}

// parseInterleaved parses flags anywhere among the positional arguments
// ("inspect session s1 --at-seq 5" as well as "inspect --at-seq 5 session s1").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// openOut opens path for writing ("-" = stdout). done closes it, returning
// the first error; a failed export leaves no half-written file.
func openOut(path string, stdout io.Writer) (io.Writer, func(error) error, error) {
	if path == "-" || path == "" {
		return stdout, func(err error) error { return err }, nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: %w", err)
	}
	return f, func(err error) error {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
		return err
	}, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
