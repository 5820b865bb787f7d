package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// Config configures a Projector.
type Config struct {
	// Stream is the JetStream stream holding the log (default events.StreamName).
	Stream string
	// BatchEvents is the most records read into one batch (default 512).
	BatchEvents int
	// BatchBytes bounds a batch by the size of its records as stored in the
	// log (default 4 MiB): the batch is applied once they reach it, so 512
	// large records are not one long transaction.
	BatchBytes int
	// BatchWait is how long records are buffered after the first one before
	// the batch is applied even if it is not full (default 20ms). A batch
	// holding a sequence a WaitFor waits for is applied at once instead
	// (hurry.go).
	BatchWait time.Duration
	// BatchApply bounds the time one transaction applies records (default
	// 100ms): past it, the records applied so far are committed (waking
	// min_seq waiters) and the rest of the batch goes into the next one.
	BatchApply time.Duration
	// Partitions is the number of streams of the log (events.PartitionedLog;
	// 0 or 1: the one stream Stream). With K > 1 the projector reads the K
	// streams <Stream>_P<i>, each from its own checkpoint
	// (Store.AppliedSeqOf), and the store must record K (SetLogPartitions).
	Partitions int
}

// DefaultConfig returns stream MEM, batches of 512 records, 4 MiB or 20ms,
// transactions of at most 100ms of applying.
func DefaultConfig() Config {
	return Config{Stream: events.StreamName, BatchEvents: 512, BatchBytes: 4 << 20,
		BatchWait: 20 * time.Millisecond, BatchApply: 100 * time.Millisecond}
}

// Validate reports the first problem of the configuration, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Stream == "" || strings.ContainsAny(c.Stream, ".*> \t\r\n/\\"):
		return fmt.Errorf("%w: Stream: %q is not a valid stream name", ErrInvalidConfig, c.Stream)
	case c.BatchEvents < 1 || c.BatchEvents > 1<<16:
		return fmt.Errorf("%w: BatchEvents: %d not in 1..65536", ErrInvalidConfig, c.BatchEvents)
	case c.BatchBytes < 1 || c.BatchBytes > 1<<30:
		return fmt.Errorf("%w: BatchBytes: %d not in 1..1GiB", ErrInvalidConfig, c.BatchBytes)
	case c.BatchWait <= 0:
		return fmt.Errorf("%w: BatchWait: must be > 0", ErrInvalidConfig)
	case c.BatchApply <= 0:
		return fmt.Errorf("%w: BatchApply: must be > 0", ErrInvalidConfig)
	case c.Partitions < 0 || c.Partitions > events.MaxLogPartitions:
		return fmt.Errorf("%w: Partitions: %d not in 0..%d", ErrInvalidConfig, c.Partitions, events.MaxLogPartitions)
	}
	return nil
}

// Projector reads the log (events.StreamReader: an ordered consumer) from the store's
// checkpoint and applies it to the store in batches. Run it in one
// goroutine; AppliedSeq, WaitFor and Lag are safe from any goroutine.
type Projector struct {
	cfg Config
	log events.StreamReader
	// parts are the readers of the log's streams (parts[0] is log) and
	// streams their names: one with the log in one stream.
	parts   []events.StreamReader
	streams []string
	store   *Store
	codec   *events.Codec
	logger  *slog.Logger

	mu      sync.Mutex
	advance chan struct{} // guarded by mu; closed (and replaced) after each commit

	faults faults // projector_faults.go
	// hurry: WaitFor's readers end the batch holding their sequence;
	// hurries[i] is partition i's (hurries[0] is hurry).
	hurry   *hurry
	hurries []*hurry
}

// NewProjector returns a projector of cfg.Stream into store. Zero fields of
// cfg take their default.
func NewProjector(cfg Config, js jetstream.JetStream, store *Store, codec *events.Codec, logger *slog.Logger) (*Projector, error) {
	def := DefaultConfig()
	if cfg.Stream == "" {
		cfg.Stream = def.Stream
	}
	if cfg.BatchEvents == 0 {
		cfg.BatchEvents = def.BatchEvents
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = def.BatchBytes
	}
	if cfg.BatchWait == 0 {
		cfg.BatchWait = def.BatchWait
	}
	if cfg.BatchApply == 0 {
		cfg.BatchApply = def.BatchApply
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil || store == nil || codec == nil {
		return nil, fmt.Errorf("%w: js, store and codec are required", ErrInvalidConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = cfg.Stream
	plog, err := events.OpenPartitionedLog(js, lcfg, max(cfg.Partitions, 1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if k := plog.Partitions(); k != store.LogPartitions() {
		return nil, fmt.Errorf("%w: the log has %d partitions, %s records %d", ErrLogPartitions, k, store.Path(), store.LogPartitions())
	}
	parts := make([]events.StreamReader, plog.Partitions())
	for i := range parts {
		parts[i] = plog.Partition(i)
	}
	p := &Projector{
		cfg: cfg, log: parts[0], parts: parts, streams: plog.Streams(), store: store, codec: codec, logger: logger,
		advance: make(chan struct{}),
		faults:  faults{wake: make(chan struct{}, 1)},
		hurry:   newHurry(),
	}
	p.hurries = make([]*hurry, len(parts))
	p.hurries[0] = p.hurry
	for i := 1; i < len(parts); i++ {
		p.hurries[i] = newHurry()
	}
	return p, nil
}

// AppliedSeq is the last stream sequence whose effects are committed. With
// the log in K > 1 partitions it is the least of the K checkpoints: a
// sequence of any partition at or below it is applied (the converse does
// not hold: see WaitForAll).
func (p *Projector) AppliedSeq() uint64 {
	if len(p.parts) == 1 {
		return p.store.AppliedSeq()
	}
	least := p.store.AppliedSeqOf(0)
	for i := 1; i < len(p.parts); i++ {
		least = min(least, p.store.AppliedSeqOf(i))
	}
	return least
}

// Partitions is the number of streams the projector reads.
func (p *Projector) Partitions() int { return len(p.parts) }

// AppliedSeqOf is the checkpoint of partition part (Store.AppliedSeqOf).
func (p *Projector) AppliedSeqOf(part int) uint64 { return p.store.AppliedSeqOf(part) }

// WaitForAll returns nil once every partition i applied targets[i] (a
// target past len(targets) is 0), or an error wrapping ErrNotCaughtUp and
// ctx.Err() when ctx ends first. Each committed batch wakes it, and the
// batch of each partition holding its target is applied at once (hurry).
func (p *Projector) WaitForAll(ctx context.Context, targets []uint64) error {
	asked := false
	for {
		p.mu.Lock()
		ch := p.advance
		p.mu.Unlock()
		behind := -1
		for i, t := range targets {
			if i < len(p.parts) && p.store.AppliedSeqOf(i) < t {
				behind = i
				break
			}
		}
		if behind < 0 {
			return nil
		}
		if !asked {
			for i, t := range targets {
				if i < len(p.parts) && p.store.AppliedSeqOf(i) < t {
					p.hurries[i].ask(t)
				}
			}
			asked = true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: partition %d applied %d, waiting for %d: %w", ErrNotCaughtUp, behind, p.store.AppliedSeqOf(behind), targets[behind], ctx.Err())
		}
	}
}

// WaitForIn returns nil once partition part applied seq, a sequence of its
// own stream (WaitForAll with that one target).
func (p *Projector) WaitForIn(ctx context.Context, part int, seq uint64) error {
	targets := make([]uint64, part+1)
	targets[part] = seq
	return p.WaitForAll(ctx, targets)
}

// committed wakes the waiters after a commit (the store's checkpoint is
// already updated).
func (p *Projector) committed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.advance)
	p.advance = make(chan struct{})
}

// WaitFor returns nil once the projection has applied stream sequence seq
// (a reader's own write), or an error wrapping ErrNotCaughtUp and ctx.Err()
// when ctx ends first. It does not poll: each committed batch wakes the
// waiters. The batch that holds seq is applied as soon as seq is read,
// without waiting out BatchWait.
func (p *Projector) WaitFor(ctx context.Context, seq uint64) error {
	return p.waitFor(ctx, seq, true)
}

// waitFor is WaitFor; hurry false leaves the batches as they are (a
// reader that only wants to know when the projection moves on).
func (p *Projector) waitFor(ctx context.Context, seq uint64, hurry bool) error {
	asked := false
	for {
		// The channel before the checkpoint: a commit that the read of the
		// checkpoint misses closes it.
		p.mu.Lock()
		ch := p.advance
		p.mu.Unlock()
		applied := p.AppliedSeq()
		if applied >= seq {
			return nil
		}
		if hurry && !asked && p.hurry != nil {
			p.hurry.ask(seq)
			asked = true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: applied %d, waiting for %d: %w", ErrNotCaughtUp, applied, seq, ctx.Err())
		}
	}
}

// Lag is the number of stream sequences not applied yet: the stream's last
// sequence minus AppliedSeq (0 when caught up).
func (p *Projector) Lag(ctx context.Context) (uint64, error) {
	var lag uint64
	for i, r := range p.parts {
		b, err := r.Bounds(ctx)
		if err != nil {
			return 0, fmt.Errorf("projections: stream %s: %w", p.streams[i], err)
		}
		if a := p.store.AppliedSeqOf(i); b.Last > a {
			lag += b.Last - a
		}
	}
	return lag, nil
}

// LogLasts are the last sequences of the log's streams, partition 0 first.
func (p *Projector) LogLasts(ctx context.Context) ([]uint64, error) {
	out := make([]uint64, len(p.parts))
	for i, r := range p.parts {
		b, err := r.Bounds(ctx)
		if err != nil {
			return out, fmt.Errorf("projections: stream %s: %w", p.streams[i], err)
		}
		out[i] = b.Last
	}
	return out, nil
}

// Run applies the log to the store until ctx ends (it then returns nil;
// records buffered but not committed are read again by the next Run) or a
// record cannot be read, decoded or applied: the error (*ApplyError for a
// record) names the stream sequence and the reason. Run never skips a record.
//
// Before each read it checks that the stream still reaches the checkpoint
// (CheckStream): a missing stream or one that ends before it stops Run with
// an error wrapping ErrLogBehind or jetstream.ErrStreamNotFound. A read
// that fails otherwise (a timeout, a reconnect, a lost quorum, a consumer
// that could not be recreated: see stopsRun) is logged, reported by
// Problem, and tried again from the checkpoint with a new consumer after a
// pause (500ms doubling to 5s). A write to the store that fails (ErrStoreWrite: a full disk, an
// I/O error) is logged, counted (WriteRetries) and tried again the same
// way, after 100ms doubling to 2s. Wake cuts either pause short, Reread
// drops the current read; Problem says what Run is retrying, or why it
// stopped.
//
// With the log in K > 1 partitions each stream is read and applied so,
// from its own checkpoint, in a goroutine of its own (the store has one
// writer at a time); the first that stops Run stops the others.
func (p *Projector) Run(ctx context.Context) error {
	p.faults.clear() // a new Run after one that stopped
	if len(p.parts) == 1 {
		return p.runPart(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(p.parts))
	for i := range p.parts {
		go func() { errs <- p.runPart(ctx, i) }()
	}
	var first error
	for range p.parts {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// runPart is Run on partition part's stream.
func (p *Projector) runPart(ctx context.Context, part int) error {
	reader, stream := p.parts[part], p.streams[part]
	log := boundedResets{StreamReader: reader, reading: func() {
		if p.faults.clearRead() {
			p.logger.Info("projector reads the log again", "stream", stream, "applied_seq", p.store.AppliedSeqOf(part))
		}
	}}
	readPause, writePause := minReadRetry, minWriteRetry
	for {
		start := p.store.AppliedSeqOf(part) + 1
		_, err := checkStream(ctx, reader, stream, start-1)
		if err == nil {
			p.logger.Info("projector starting", "stream", stream, "from_seq", start)
			rctx, cancel := context.WithCancel(ctx)
			p.faults.read.Store(&cancel)
			err = consumeHurried(rctx, log, stream, p.codec, start, 0, 0, nil, p.cfg.BatchEvents, p.cfg.BatchBytes, p.cfg.BatchWait, 0, p.hurries[part], func(recs []Decoded) error {
				for len(recs) > 0 {
					n, err := p.store.applyBoundedIn(ctx, part, recs, time.Now().Add(p.cfg.BatchApply))
					if ctx.Err() != nil {
						return ctx.Err() // rolled back: read again from the checkpoint by the next Run
					}
					if err != nil {
						return classifyWrite(err)
					}
					recs = recs[n:]
					if p.faults.clear() {
						p.logger.Info("projector writes the projection again", "stream", stream, "applied_seq", p.store.AppliedSeqOf(part))
					}
					readPause, writePause = minReadRetry, minWriteRetry
					p.committed()
				}
				return nil
			})
			reread := ctx.Err() == nil && rctx.Err() != nil && !errors.Is(err, ErrApply)
			cancel()
			if reread {
				continue // Reread: read again from the checkpoint, at once
			}
		}
		if err != nil && ctx.Err() != nil && !errors.Is(err, ErrApply) {
			return nil
		}
		var pause time.Duration
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrStoreWrite):
			pause, writePause = writePause, min(2*writePause, maxWriteRetry)
			p.writeFailed(err, pause)
		case stopsRun(streamGone(stream, p.store.AppliedSeqOf(part), err)):
			err = streamGone(stream, p.store.AppliedSeqOf(part), err)
			p.faults.set(fmt.Sprintf("stopped at applied seq %d: %v", p.store.AppliedSeqOf(part), err))
			p.logger.Error("projector stopped", "stream", stream, "applied_seq", p.store.AppliedSeqOf(part), "err", err)
			return err
		default:
			pause, readPause = readPause, min(2*readPause, maxReadRetry)
			p.readFailed(err, pause)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-p.faults.wake:
			t.Stop()
		}
	}
}
