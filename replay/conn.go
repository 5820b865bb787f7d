package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/dirlock"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ProjectionFile is the name of the projection bbolt file in a node's data
// directory; JetStreamDir the embedded server's store directory.
const (
	ProjectionFile = "projection.db"
	JetStreamDir   = "jetstream"
)

// LockWhat is how replay names itself in a data dir's lock file.
const LockWhat = "agentmem replay"

// Conn says how to reach the log: a running NATS (NATSURL) or the data
// directory of a stopped node (DataDir), on whose store an embedded server is
// started for the duration of the command, holding the data dir's lock
// (internal/dirlock) as a node does: on the directory of a running node the
// command fails at once, naming the node. With both, NATSURL is used for the
// log and DataDir only for files (projection, sizes), and no lock is taken.
type Conn struct {
	NATSURL   string
	NATSCreds string
	DataDir   string
	// Stream is the log's stream (default events.StreamName).
	Stream string
}

// Validate reports a connection that cannot work, wrapping ErrUsage.
func (c Conn) Validate() error {
	if c.NATSURL == "" && c.DataDir == "" {
		return fmt.Errorf("%w: give --nats-url (a running NATS) or --data-dir (a stopped node's data directory)", ErrUsage)
	}
	if c.NATSCreds != "" && c.NATSURL == "" {
		return fmt.Errorf("%w: --nats-creds needs --nats-url", ErrUsage)
	}
	return nil
}

func (c Conn) stream() string {
	if c.Stream == "" {
		return events.StreamName
	}
	return c.Stream
}

// projection is the projection file: path if given, else the one of
// DataDir ("" without either).
func (c Conn) projection(path string) string {
	if path == "" && c.DataDir != "" {
		return filepath.Join(c.DataDir, ProjectionFile)
	}
	return path
}

// link is an open connection; close releases it (and stops the embedded
// server, if one was started).
type link struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	embedded *natsembed.Server
	lock     *dirlock.Lock // the data dir's, held while embedded runs
	stream   string
}

func (l *link) close() {
	if l.nc != nil {
		l.nc.Close()
	}
	if l.embedded != nil {
		l.embedded.Shutdown()
	}
	if l.lock != nil {
		_ = l.lock.Close()
	}
}

// dial connects as c says.
func (c Conn) dial() (*link, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	l := &link{stream: c.stream()}
	url := c.NATSURL
	var opts []nats.Option
	opts = append(opts, nats.Name("agentmem-replay"), nats.MaxReconnects(0))
	if url == "" {
		store := filepath.Join(c.DataDir, JetStreamDir)
		if fi, err := os.Stat(store); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("replay: %s is not a node data directory (no %s/ inside): %w", c.DataDir, JetStreamDir, ErrNoStream)
		}
		lock, err := dirlock.Acquire(c.DataDir, LockWhat)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		l.lock = lock
		cfg := natsembed.DefaultConfig()
		cfg.DataDir = store
		cfg.Listen = "127.0.0.1:-1"
		s, err := natsembed.Start(cfg)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("replay: start embedded NATS on %s: %w", store, err)
		}
		l.embedded = s
		url = s.ClientURL()
	}
	if c.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(c.NATSCreds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("replay: connect %s: %w", url, err)
	}
	l.nc = nc
	if l.js, err = jetstream.New(nc); err != nil {
		l.close()
		return nil, fmt.Errorf("replay: jetstream: %w", err)
	}
	return l, nil
}

// streamInfo returns the log stream's info; a missing stream wraps ErrNoStream.
func (l *link) streamInfo(ctx context.Context, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	return l.streamInfoOf(ctx, l.stream, opts...)
}

// streamInfoOf is streamInfo of the stream name (a partition's).
func (l *link) streamInfoOf(ctx context.Context, name string, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	s, err := l.js.Stream(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNoStream, name)
		}
		return nil, fmt.Errorf("replay: stream %s: %w", name, err)
	}
	info, err := s.Info(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("replay: stream %s info: %w", name, err)
	}
	return info, nil
}

// record is one stored message read by scan.
type record struct {
	Subject string
	Seq     uint64
	Time    time.Time
	Data    []byte
}

// errStop, returned by a scan callback, ends the scan without error.
var errStop = errors.New("stop")

// scan calls fn for every message of the stream matching filter ("" = all,
// else one subject), in stream order, that was stored when scan started,
// skipping the sequences the stream no longer holds. It reads through the
// events log: events.StreamReader for the whole stream, Log.Load for one
// subject. fn returning errStop ends the scan with a nil error.
func (l *link) scan(ctx context.Context, filter string, fn func(record) error) error {
	cfg := events.DefaultJetStreamConfig()
	cfg.Stream = l.stream
	log, err := events.OpenJetStreamLog(l.js, cfg)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	err = l.scanLog(ctx, log, filter, fn)
	switch {
	case errors.Is(err, errStop):
		return nil
	case errors.Is(err, events.ErrNoStream):
		return fmt.Errorf("%w: %s", ErrNoStream, l.stream)
	}
	return err
}

func (l *link) scanLog(ctx context.Context, log *events.JetStreamLog, filter string, fn func(record) error) error {
	if filter != "" {
		_, err := log.Load(ctx, filter, 0, func(r events.Record) error {
			return fn(record(r))
		})
		return err
	}
	b, err := log.Bounds(ctx)
	if err != nil || b.Msgs == 0 {
		return err
	}
	cur, err := log.Read(ctx, b.First, events.WithStop(b.Last))
	if err != nil {
		return err
	}
	defer cur.Close()
	for {
		r, err := cur.Next(ctx)
		if errors.Is(err, events.ErrEndOfRead) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("replay: read stream %s: %w", l.stream, err)
		}
		if err := fn(record(r)); err != nil {
			return err
		}
	}
}

// scanPartitions is scan over the k partition streams of the log, one
// after the other, partition 0 first: start is called before each.
func (l *link) scanPartitions(ctx context.Context, k int, start func(int), fn func(record) error) error {
	cfg := events.DefaultJetStreamConfig()
	cfg.Stream = l.stream
	plog, err := events.OpenPartitionedLog(l.js, cfg, k)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	for i := range k {
		start(i)
		err := l.scanLog(ctx, plog.Partition(i), "", fn)
		switch {
		case errors.Is(err, errStop):
			return nil
		case errors.Is(err, events.ErrNoStream):
			return fmt.Errorf("%w: %s", ErrNoStream, plog.Streams()[i])
		case err != nil:
			return err
		}
	}
	return nil
}
