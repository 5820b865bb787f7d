package client

import (
	"context"
	"errors"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// followWait is how long one watch poll waits for a change.
const followWait = 10 * time.Second

// FollowSession is the watch endpoint of session id (for Follow).
func FollowSession(id string) string { return subject(id, "watch") }

// FollowScope is the watch endpoint of scope s (Agent, Workflow, …).
func FollowScope(s Scope) string { return s.Subject("watch") }

// Follow is Watch through the service: it long-polls endpoint
// (FollowSession, FollowScope) from fromSeq and delivers the changes in
// order, decoded, with entry values decompressed, until ctx ends. It needs
// no JetStream permission (the node reads the log for the caller, checking
// its access): it is how a tenant watches. Each poll is bounded by the
// node's per-caller max_watches. A poll refused or failed ends the watch
// with that error (Err).
func (c *Client) Follow(ctx context.Context, endpoint string, fromSeq uint64) (*Watch, error) {
	if endpoint == "" {
		return nil, errors.New("agentmem: follow: empty endpoint")
	}
	w := &Watch{ch: make(chan Change)}
	go w.follow(ctx, c, endpoint, fromSeq)
	return w, nil
}

func (w *Watch) follow(ctx context.Context, c *Client, endpoint string, from uint64) {
	defer close(w.ch)
	codec := events.NewCodec()
	err := func() error {
		for {
			pctx, cancel := context.WithTimeout(ctx, followWait+c.timeout)
			rep := &memoryv1.WatchReply{}
			err := c.call(pctx, endpoint, &memoryv1.WatchRequest{FromSeq: from, WaitMs: uint32(followWait.Milliseconds())}, rep)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, ch := range rep.GetChanges() {
				change, err := decodeChange(codec, ch.GetSeq(), ch.GetSubject(), ch.GetBatch())
				if err != nil {
					return err
				}
				select {
				case w.ch <- change:
				case <-ctx.Done():
					return nil
				}
			}
			from = max(from, rep.GetLastSeq())
		}
	}()
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}
