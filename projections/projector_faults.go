package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// ErrStoreWrite is returned (wrapped, with the cause) when the projection
// file cannot be written: a full disk, a quota, an I/O error. The projector
// does not stop on it: it waits (minWriteRetry, doubling up to
// maxWriteRetry, or until Wake) and reads the records again from its
// checkpoint, so nothing is skipped and nothing applied twice.
var ErrStoreWrite = errors.New("projections: cannot write the projection")

// The projector's pause after a failed write, doubling between the two.
const (
	minWriteRetry = 100 * time.Millisecond
	maxWriteRetry = 2 * time.Second
)

// storeWriteError marks an ApplyBatch failure that is not the record's
// fault (not an *ApplyError, not a closed store): worth another try.
type storeWriteError struct{ err error }

func (e *storeWriteError) Error() string   { return e.err.Error() }
func (e *storeWriteError) Unwrap() []error { return []error{ErrStoreWrite, e.err} }

// classifyWrite wraps a transient ApplyBatch error as a storeWriteError and
// returns the others as they are.
func classifyWrite(err error) error {
	var ae *ApplyError
	if err == nil || errors.As(err, &ae) || errors.Is(err, ErrClosed) {
		return err
	}
	return &storeWriteError{err: err}
}

// faults is what the projector reports about itself; safe from any
// goroutine.
type faults struct {
	writeRetries atomic.Uint64
	problem      atomic.Pointer[string]             // nil while it applies the log
	readProblem  atomic.Bool                        // problem is a failed read
	wake         chan struct{}                      // capacity 1: Wake never blocks
	read         atomic.Pointer[context.CancelFunc] // ends Run's current read (Reread)
}

func (f *faults) set(problem string) { f.problem.Store(&problem) }
func (f *faults) clear() bool {
	f.readProblem.Store(false)
	return f.problem.Swap(nil) != nil
}

// setRead records a read problem; clearRead clears it (and only it: a
// write problem is cleared by the next commit) and reports whether there
// was one.
func (f *faults) setRead(problem string) {
	f.readProblem.Store(true)
	f.set(problem)
}

func (f *faults) clearRead() bool {
	if !f.readProblem.Swap(false) {
		return false
	}
	f.clear()
	return true
}

// Problem returns "" while the projector applies the log (or waits for
// it), otherwise what keeps it from doing so: retrying a write that failed
// (with the error), or stopped for good (with the error Run returned).
func (p *Projector) Problem() string {
	if s := p.faults.problem.Load(); s != nil {
		return *s
	}
	return ""
}

// WriteRetries is the number of batches whose write to the projection
// failed and was tried again (a counter: it only grows).
func (p *Projector) WriteRetries() uint64 { return p.faults.writeRetries.Load() }

// Wake cuts short the projector's pause after a failed read or write: it
// tries again at once. The node calls it when the log or the disk is
// healthy again. It never blocks.
func (p *Projector) Wake() {
	select {
	case p.faults.wake <- struct{}{}:
	default:
	}
}

// Reread ends the projector's current read of the log: it reads again
// from its checkpoint at once (records buffered but not committed are read
// again). The node calls it after restarting the embedded JetStream: the
// server-side consumer is gone, which the read would otherwise notice only
// after missed heartbeats (seconds). It never blocks.
func (p *Projector) Reread() {
	if c := p.faults.read.Load(); c != nil {
		(*c)()
	}
}

// writeFailed counts, records and logs a failed write.
func (p *Projector) writeFailed(err error, retryIn time.Duration) {
	p.faults.writeRetries.Add(1)
	p.faults.set(fmt.Sprintf("cannot write the projection at applied seq %d (retrying): %v", p.AppliedSeq(), err))
	p.logger.Error("projector cannot write the projection; trying again", "stream", p.cfg.Stream,
		"applied_seq", p.AppliedSeq(), "retry_in", retryIn, "retries", p.WriteRetries(), "err", err)
}

// readFailed records and logs a failed read of the log: at error level
// the first time and when the error changes, at debug while it repeats
// (the node wakes the projector on every health tick).
func (p *Projector) readFailed(err error, retryIn time.Duration) {
	problem := fmt.Sprintf("cannot read the log after applied seq %d (retrying): %v", p.AppliedSeq(), err)
	level := slog.LevelError
	if p.Problem() == problem {
		level = slog.LevelDebug
	}
	p.faults.setRead(problem)
	p.logger.Log(context.Background(), level, "projector cannot read the log; trying again", "stream", p.cfg.Stream,
		"applied_seq", p.AppliedSeq(), "retry_in", retryIn, "err", err)
}
