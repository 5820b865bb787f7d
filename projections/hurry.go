package projections

import (
	"context"
	"sync/atomic"
)

// hurry lets a reader waiting for a stream sequence (WaitFor: a query's
// min_seq, the context assembler's wait for a session's previous command)
// cut the projector's batch short: without it, a record read at the start
// of a batch waits BatchWait (20 ms by default) before it is applied, and
// so does its reader, while the batch waits for records that may never
// come. A batch holding the wanted sequence is applied at once; batches
// nobody waits for still fill for BatchWait.
type hurry struct {
	// want is the highest sequence a reader waits for.
	want atomic.Uint64
	// asked wakes the batch being read (buffered: an ask between two
	// batches wakes the next one).
	asked chan struct{}
}

func newHurry() *hurry { return &hurry{asked: make(chan struct{}, 1)} }

// ask records that a reader waits for seq.
func (h *hurry) ask(seq uint64) {
	for {
		w := h.want.Load()
		if w >= seq || h.want.CompareAndSwap(w, seq) {
			break
		}
	}
	select {
	case h.asked <- struct{}{}:
	default:
	}
}

// due reports whether a batch of the records first..last holds a sequence
// a reader waits for (nil: never).
func (h *hurry) due(first, last uint64) bool {
	if h == nil {
		return false
	}
	w := h.want.Load()
	return w >= first && w <= last
}

// watch ends the batch (cancel) when a reader asks for a sequence it holds
// (first..last, last read as it grows), until ctx ends.
func (h *hurry) watch(ctx context.Context, first uint64, last *atomic.Uint64, cancel context.CancelFunc) {
	if h == nil {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.asked:
				if h.due(first, last.Load()) {
					cancel()
					return
				}
			}
		}
	}()
}
