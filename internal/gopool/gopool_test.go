package gopool

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunsEveryFunction(t *testing.T) {
	p := New(time.Minute)
	defer p.Stop()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.Go(func() { n.Add(1); wg.Done() })
	}
	wg.Wait()
	if n.Load() != 1000 {
		t.Fatalf("ran %d functions, want 1000", n.Load())
	}
}

func TestReusesIdleGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		defer p.Stop()
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		synctest.Wait() // the goroutine idles in run
		ran := make(chan struct{})
		p.Go(func() { close(ran) })
		<-ran
		if n := p.started.Load(); n != 1 {
			t.Fatalf("%d goroutines started for two functions in turn, want 1", n)
		}
	})
}

func TestIdleGoroutineExits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Second)
		p.Go(func() {})
		time.Sleep(2 * time.Second)
		synctest.Wait() // the bubble ends only when every goroutine exited
	})
}

func TestStopEndsIdleAndLaterGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Hour)
		p.Go(func() {})
		synctest.Wait()
		p.Stop()
		p.Stop() // idempotent
		ran := false
		p.Go(func() { ran = true })
		synctest.Wait()
		if !ran {
			t.Fatal("a function handed over after Stop did not run")
		}
	})
}
