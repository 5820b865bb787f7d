package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start-up waits for a NATS cluster that is not ready yet: servers not yet
// listening, a JetStream meta leader not yet elected, too few peers
// registered to place a replicated stream. Three nodes started together
// with a fresh three-server cluster used to exit after one 5 s attempt;
// now each step that creates or reads a stream, bucket or object store is
// tried again, with a growing pause, until the cluster takes it. Errors
// that waiting cannot fix (a refused user or permission, a stream the
// migration left half-done, an invalid setting) still fail Start at once.
const (
	// startAttempt bounds one attempt of a step (a JetStream request
	// nobody answers, while no leader is elected, ends with it).
	startAttempt = 5 * time.Second
	// startPauseMin and startPauseMax bound the pause between attempts:
	// it doubles from the first to the second.
	startPauseMin = 200 * time.Millisecond
	startPauseMax = 5 * time.Second
	// notEnabledPatience is how long "JetStream not enabled" is waited
	// out: a server that is starting answers so for a moment, one whose
	// configuration has no JetStream answers so for ever.
	notEnabledPatience = 30 * time.Second
)

// JetStream API error codes of a cluster that is still settling.
const (
	errCodeClusterNotAvail = 10008 // JetStream system temporarily unavailable (no meta leader)
	errCodeClusterNotLdr   = 10009 // JetStream cluster can not handle request
	errCodeStreamOffline   = 10118 // stream is offline (its group has no leader yet)
	errCodeNotEnabled      = 10076 // JetStream not enabled
)

// setWaiting records what Start waits for (/healthz shows it while the node
// is starting).
func (n *Node) setWaiting(what string) { n.waiting.Store(&what) }

// startingFor is what Start waits for, and whether it is still running.
func (n *Node) startingFor() (string, bool) {
	if p := n.waiting.Load(); p != nil {
		return *p, true
	}
	return "", false
}

// untilReady runs step until it succeeds, fails with an error that waiting
// cannot fix (returned as is), or ctx ends (an error wrapping ctx.Err()
// that names what was awaited). Each failed attempt is logged with its
// reason and shown by /healthz.
func (n *Node) untilReady(ctx context.Context, what string, step func(context.Context) error) error {
	n.setWaiting(what)
	pause := startPauseMin
	began := time.Now()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, startAttempt)
		err := step(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				n.logger.Info("the NATS cluster took it", "step", what, "attempts", attempt, "waited", time.Since(began).Round(time.Millisecond))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node: stopped while waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		}
		if err := n.unfixable(err, time.Since(began)); err != nil {
			return err
		}
		n.setWaiting(what + ": " + err.Error())
		n.logger.Warn("waiting for the NATS cluster", "step", what, "attempt", attempt, "retry_in", pause, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("node: stopped while waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, startPauseMax)
	}
}

// unfixable returns err (explained where it can be) when waiting cannot
// fix it, nil when the cluster may still come to take the step.
func (n *Node) unfixable(err error, waited time.Duration) error {
	// A request the server refused to let through is never answered: it
	// ends as a timeout, and the refusal is the connection's last error.
	if n.nc != nil {
		if last := n.nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) {
			return fmt.Errorf("node: the NATS server refused the node's user a permission it needs (see the README's security model): %w (while: %v)", last, err)
		}
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case errCodeClusterNotAvail, errCodeClusterNotLdr, errCodeStreamOffline:
			return nil
		case errCodeNoSuitablePeers, errCodeInsufficientRes:
			// Peers that have not joined yet look the same as too few
			// servers for --replicas: wait, saying which (replicasError).
			return nil
		case errCodeNotEnabled:
			return notEnabled(err, waited)
		}
		return err
	}
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return notEnabled(err, waited)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionReconnecting):
		return nil
	}
	return err
}

// notEnabled waits out "JetStream not enabled" for notEnabledPatience.
func notEnabled(err error, waited time.Duration) error {
	if waited < notEnabledPatience {
		return nil
	}
	return fmt.Errorf("node: the NATS server has no JetStream after %s (enable it in the server's configuration: jetstream {}): %w", waited.Round(time.Second), err)
}

// connectRetry connects to url, trying again while no server of it
// accepts connections. A refused user fails at once, naming the flags
// that gave its credentials.
func (n *Node) connectRetry(ctx context.Context, who, flags, url string, opts ...nats.Option) (*nats.Conn, error) {
	var nc *nats.Conn
	err := n.untilReady(ctx, "NATS at "+url, func(context.Context) error {
		var err error
		nc, err = nats.Connect(url, opts...)
		return err
	})
	if err == nil {
		return nc, nil
	}
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired) {
		return nil, fmt.Errorf("node: connect %s: the NATS server refused %s credentials (%s): %w", url, who, flags, err)
	}
	return nil, fmt.Errorf("node: connect %s: %w", url, err)
}
