package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/placement"
)

// NodeIDFile keeps a node's id in its data dir.
const NodeIDFile = "node-id"

// nodeID is cfg.NodeID, else the id kept in the data dir (made on first
// start), else a random one.
func nodeID(cfg Config) (string, error) {
	if cfg.NodeID != "" {
		return cfg.NodeID, nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := "node-" + hex.EncodeToString(b[:])
	if cfg.DataDir == "" {
		return id, nil
	}
	path := filepath.Join(cfg.DataDir, NodeIDFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		return strings.TrimSpace(string(data)), nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("node: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return "", fmt.Errorf("node: data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	return id, nil
}

// openPlacement opens the placement table; OnRelease passivates the
// actors of a partition this node stops serving.
func (n *Node) openPlacement(ctx context.Context, js jetstream.JetStream) error {
	pcfg := n.cfg.Placement
	var err error
	if pcfg.NodeID, err = nodeID(n.cfg); err != nil {
		return err
	}
	pcfg.Replicas, pcfg.Logger, pcfg.Registerer = n.cfg.Replicas, n.logger, n.Registry
	pcfg.Bucket = placementBucket(n.cfg)
	hooks := placement.Hooks{OnRelease: func(ctx context.Context, p int) {
		if err := n.dir.PassivateWhere(ctx, func(id string) bool { return placement.Partition(id, pcfg.Partitions) == p }); err != nil {
			n.logger.Warn("partition released before its actors stopped", "partition", p, "err", err)
		}
	}}
	if n.storage != nil && n.storage.bucket != "" {
		// The storage watch probes the bucket's quorum: while it is lost
		// and the log's stream answers with its quorum, this node keeps
		// the partitions it holds. Not while the log is lost too: then
		// this node may be the one cut off from the cluster (the others
		// may take its partitions), and it could serve only reads of
		// what its actors hold, possibly stale. A lease past its expiry
		// is held (not served) as long as the probe may take to see the
		// quorum lost: the peers' silence (replicaSeen), the probe's
		// timeout and one interval.
		hooks.BucketLost = func() bool {
			st := n.storage.State()
			return !st.Placement.OK && st.JetStream.OK
		}
		pcfg.QuorumWait = replicaSeen + quorumProbeTimeout + n.cfg.HealthInterval
	}
	switch {
	case n.proj != nil && n.cfg.LogPartitions > 1:
		hooks.Applied = n.proj.AppliedSeq // the least partition checkpoint
	case n.store != nil:
		hooks.Applied = n.store.AppliedSeq
	}
	if err = n.untilReady(ctx, "bucket "+pcfg.Bucket, func(ctx context.Context) (err error) {
		n.placement, err = placement.New(ctx, js, pcfg, hooks)
		return err
	}); err != nil {
		return replicasError(n.cfg.Replicas, err)
	}
	n.goBackground("placement stopped: this node's leases age out", n.placement.Run)
	return nil
}

// placementBucket is the placement bucket's name: --placement-bucket, or
// the log stream's (placement.BucketFor) when it is the default.
func placementBucket(cfg Config) string {
	if cfg.Placement.Bucket == placement.DefaultBucket {
		return placement.BucketFor(cfg.Stream)
	}
	return cfg.Placement.Bucket
}

// serveInternal subscribes this node's internal subjects: requests
// forwarded to it, and calls on its actors.
func (n *Node) serveInternal(calls callServer) error {
	me := n.placement.NodeID()
	prefix := forwardSubject(me, "")
	fwd, err := n.nc.Subscribe(prefix+">", func(m *nats.Msg) {
		n.internalLast.Store(time.Now().UnixNano())
		m.Subject = strings.TrimPrefix(m.Subject, prefix)
		n.natsAPI.ServeForwarded(m)
	})
	if err != nil {
		return fmt.Errorf("node: subscribe forwards: %w", err)
	}
	call, err := n.nc.Subscribe(callSubject(me), func(m *nats.Msg) {
		n.internalLast.Store(time.Now().UnixNano())
		calls.serve(m)
	})
	if err != nil {
		return fmt.Errorf("node: subscribe calls: %w", err)
	}
	for _, s := range []*nats.Subscription{fwd, call} {
		if err := s.SetPendingLimits(1<<16, 256<<20); err != nil {
			return err
		}
	}
	n.internalSubs = []*nats.Subscription{fwd, call}
	return nil
}

// readyPlacementMin is the least readyPlacement waits (two leases
// otherwise): a short lease must not make a slow start fail.
const readyPlacementMin = 10 * time.Second

// readyPlacement waits until this node holds the partitions it takes
// without waiting for anyone (free ones, and its own from a previous run).
func (n *Node) readyPlacement(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, max(2*n.cfg.Placement.LeaseTTL, readyPlacementMin))
	defer cancel()
	if err := n.placement.Ready(rctx); err != nil {
		return fmt.Errorf("node: placement: taking this node's partitions: %w", err)
	}
	return nil
}
