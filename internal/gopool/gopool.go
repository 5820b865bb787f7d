package gopool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs functions on reused goroutines. The zero value is not usable;
// use New.
type Pool struct {
	work chan func() // unbuffered: a send succeeds only to an idle goroutine
	quit chan struct{}
	stop sync.Once
	idle time.Duration
	// started counts the goroutines started (tests).
	started atomic.Int64
}

// New returns a pool whose goroutines exit after idle without work.
func New(idle time.Duration) *Pool {
	return &Pool{work: make(chan func()), quit: make(chan struct{}), idle: idle}
}

// Go runs fn on an idle goroutine of the pool, or on a new one when none
// waits. It never blocks. After Stop, fn still runs (on a goroutine that
// exits when fn returns).
func (p *Pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.started.Add(1)
		go p.run(fn)
	}
}

// run runs fn, then the functions handed to it until it idles for p.idle
// or the pool stops.
func (p *Pool) run(fn func()) {
	fn()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case fn := <-p.work:
			fn()
			t.Reset(p.idle)
		case <-t.C:
			return
		case <-p.quit:
			return
		}
	}
}

// Stop makes the idle goroutines exit, and the busy ones once their
// function returns. It is idempotent; it does not wait for the functions
// running.
func (p *Pool) Stop() { p.stop.Do(func() { close(p.quit) }) }
