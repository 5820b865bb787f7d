package node

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
)

// DirectoryForTest is the node's actor directory, for tests that bypass
// placement (what a request that passed the ownership check just before a
// pause does).
func (n *Node) DirectoryForTest() *actors.Directory { return n.dir }

// ConnectedServerForTest names the NATS server the node's connection is on.
func (n *Node) ConnectedServerForTest() string { return n.nc.ConnectedServerName() }

// DataDirForTest is the node's data directory.
func (n *Node) DataDirForTest() string { return n.cfg.DataDir }

// CompactForTest runs one pass of the log compactor now (scopes rewritten,
// messages removed); an error if --log-window is off.
func (n *Node) CompactForTest(ctx context.Context) (int, uint64, error) {
	if n.compactor == nil {
		return 0, 0, errors.New("node: no log compactor (--log-window 0)")
	}
	return n.compactor.sweep(ctx)
}

// RetentionForTest runs one pass of the archive and delete-after sweep now.
func (n *Node) RetentionForTest(ctx context.Context) error {
	if n.retention == nil {
		return errors.New("node: no retention sweep")
	}
	if n.retention.after > 0 {
		if _, err := n.retention.sweep(ctx); err != nil {
			return err
		}
	}
	if n.retention.deleteAfter > 0 {
		if _, err := n.retention.sweepErase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CheckLogForTest has the log health check look at the stream now and
// returns what it found ("": healthy); /healthz and agentmem_log_healthy
// say the same from then on.
func (n *Node) CheckLogForTest(ctx context.Context) (string, error) {
	if n.logHealth == nil {
		return "", errors.New("node: no log health check")
	}
	return n.logHealth.Check(ctx)
}

// ServeForTest hands r to the node's dispatcher, as a transport does.
func (n *Node) ServeForTest(r *api.Request) { n.disp.Serve(r) }

// MetricsForTest is the node's API instruments.
func (n *Node) MetricsForTest() *api.Metrics { return n.svc.Metrics() }

// HoldProjectionForTest stops the node's projection from applying
// anything (its checkpoints stay) until release; reads are served.
func (n *Node) HoldProjectionForTest() (release func(), err error) { return n.store.HoldWrites() }
