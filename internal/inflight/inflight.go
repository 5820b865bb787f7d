// Package inflight counts the requests a service has begun and not
// answered, so that it stops only once they are answered.
package inflight

import (
	"context"
	"sync"
	"time"
)

// Counter counts the requests the service has begun and not answered.
// Unlike a sync.WaitGroup a request may begin while Stop waits for the
// count to reach zero: a stopping node goes on serving (forwarding) what
// still reaches it, the messages its drained subscriptions deliver after
// Stop began included, until it is closed.
type Counter struct {
	mu     sync.Mutex
	n      int           // guarded by mu
	begun  uint64        // requests begun so far; guarded by mu
	closed bool          // guarded by mu: no request begins any more
	zero   chan struct{} // closed when n reaches zero (nil: nobody waits); guarded by mu
}

// Begin counts one request, unless closed (false).
func (f *Counter) Begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	f.begun++
	return true
}

// Done ends one request begun.
func (f *Counter) Done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.zero != nil {
		close(f.zero)
		f.zero = nil
	}
}

// CloseWhenQuiet waits until no request is in flight and none began for
// quiet, then closes: later requests are refused. It returns ctx's error
// (and does not close) if ctx ends first.
func (f *Counter) CloseWhenQuiet(ctx context.Context, quiet time.Duration) error {
	for {
		f.mu.Lock()
		if f.n > 0 {
			if f.zero == nil {
				f.zero = make(chan struct{})
			}
			ch := f.zero
			f.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		begun := f.begun
		f.mu.Unlock()
		t := time.NewTimer(quiet)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		f.mu.Lock()
		if f.n == 0 && f.begun == begun {
			f.closed = true
			f.mu.Unlock()
			return nil
		}
		f.mu.Unlock()
	}
}
