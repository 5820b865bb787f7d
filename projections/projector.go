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
	}
	return nil
}

// Projector reads the log (events.StreamReader: an ordered consumer) from the store's
// checkpoint and applies it to the store in batches. Run it in one
// goroutine; AppliedSeq, WaitFor and Lag are safe from any goroutine.
type Projector struct {
	cfg    Config
	log    events.StreamReader
	store  *Store
	codec  *events.Codec
	logger *slog.Logger

	mu      sync.Mutex
	advance chan struct{} // guarded by mu; closed (and replaced) after each commit

	faults faults // projector_faults.go
	// hurry: WaitFor's readers end the batch holding their sequence.
	hurry *hurry
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
	log, err := events.OpenJetStreamLog(js, lcfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Projector{
		cfg: cfg, log: log, store: store, codec: codec, logger: logger,
		advance: make(chan struct{}),
		faults:  faults{wake: make(chan struct{}, 1)},
		hurry:   newHurry(),
	}, nil
}

// AppliedSeq is the last stream sequence whose effects are committed.
func (p *Projector) AppliedSeq() uint64 { return p.store.AppliedSeq() }

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
		applied := p.store.AppliedSeq()
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
	b, err := p.log.Bounds(ctx)
	if err != nil {
		return 0, fmt.Errorf("projections: stream %s: %w", p.cfg.Stream, err)
	}
	if a := p.AppliedSeq(); b.Last > a {
		return b.Last - a, nil
	}
	return 0, nil
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
func (p *Projector) Run(ctx context.Context) error {
	log := boundedResets{StreamReader: p.log, reading: func() {
		if p.faults.clearRead() {
			p.logger.Info("projector reads the log again", "stream", p.cfg.Stream, "applied_seq", p.AppliedSeq())
		}
	}}
	readPause, writePause := minReadRetry, minWriteRetry
	p.faults.clear() // a new Run after one that stopped
	for {
		start := p.store.AppliedSeq() + 1
		_, err := checkStream(ctx, p.log, p.cfg.Stream, start-1)
		if err == nil {
			p.logger.Info("projector starting", "stream", p.cfg.Stream, "from_seq", start)
			rctx, cancel := context.WithCancel(ctx)
			p.faults.read.Store(&cancel)
			err = consumeHurried(rctx, log, p.cfg.Stream, p.codec, start, 0, 0, nil, p.cfg.BatchEvents, p.cfg.BatchBytes, p.cfg.BatchWait, 0, p.hurry, func(recs []Decoded) error {
				for len(recs) > 0 {
					n, err := p.store.applyBounded(ctx, recs, time.Now().Add(p.cfg.BatchApply))
					if ctx.Err() != nil {
						return ctx.Err() // rolled back: read again from the checkpoint by the next Run
					}
					if err != nil {
						return classifyWrite(err)
					}
					recs = recs[n:]
					if p.faults.clear() {
						p.logger.Info("projector writes the projection again", "stream", p.cfg.Stream, "applied_seq", p.AppliedSeq())
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
		case stopsRun(streamGone(p.cfg.Stream, p.AppliedSeq(), err)):
			err = streamGone(p.cfg.Stream, p.AppliedSeq(), err)
			p.faults.set(fmt.Sprintf("stopped at applied seq %d: %v", p.AppliedSeq(), err))
			p.logger.Error("projector stopped", "stream", p.cfg.Stream, "applied_seq", p.AppliedSeq(), "err", err)
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
