package inflight

import (
	"context"
	"testing"
	"time"
)

// TestCloseWhenQuiet: closing waits for the requests in flight, a request
// may still begin meanwhile, and none begins once closed.
func TestCloseWhenQuiet(t *testing.T) {
	var c Counter
	if !c.Begin() {
		t.Fatal("refused before closing")
	}
	closed := make(chan error, 1)
	go func() { closed <- c.CloseWhenQuiet(context.Background(), 10*time.Millisecond) }()
	time.Sleep(20 * time.Millisecond)
	if !c.Begin() { // a late request while draining
		t.Fatal("refused while draining")
	}
	select {
	case err := <-closed:
		t.Fatalf("closed with requests in flight: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	c.Done()
	c.Done()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c.Begin() {
		t.Fatal("began after closing")
	}
}

// TestCloseWhenQuietBounded: ctx bounds the wait, and the counter stays open.
func TestCloseWhenQuietBounded(t *testing.T) {
	var c Counter
	c.Begin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := c.CloseWhenQuiet(ctx, time.Millisecond); err == nil {
		t.Fatal("closed with a request in flight")
	}
	if !c.Begin() {
		t.Fatal("closed by a wait that ended")
	}
}
