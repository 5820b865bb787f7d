package placement

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultBucket is the placement KV bucket's name.
const DefaultBucket = "MEM_PLACEMENT"

// Config configures a node's share of the placement.
type Config struct {
	// NodeID names this node (1..64 of [A-Za-z0-9_-]); it must be unique
	// in the cluster and stable across restarts (a restarted node takes
	// its own leases back at once instead of waiting for them to expire).
	NodeID string
	// Bucket is the KV bucket of the leases and heartbeats.
	Bucket string
	// Replicas is the bucket's replica count (the log's).
	Replicas int
	// Partitions is the number of partitions of the id space; every node
	// of a cluster must use the same number (Join refuses otherwise).
	Partitions int
	// LeaseTTL is how long a lease lives without a refresh: the longest
	// a dead node's partitions stay unserved.
	LeaseTTL time.Duration
	// Tick is how often the node checks its leases and claims free
	// partitions (a watch event also wakes it).
	Tick time.Duration
	// OpTimeout bounds one KV operation.
	OpTimeout time.Duration
	// ReleaseTimeout bounds OnRelease of one partition.
	ReleaseTimeout time.Duration
	// QuorumWait is how long a lease past its expiry (its refreshes got no
	// answer) is still held, not served, waiting for Hooks.BucketLost to
	// say the bucket lost its quorum (then it is served again, and kept
	// while the bucket is lost), counted from its expiry or from the last
	// tick that saw the bucket lost; a refresh answered meanwhile renews
	// or ends it. 0: a lease is dropped at its expiry unless the bucket is
	// lost then. The node sets it to how long its probe takes to see a
	// lost quorum.
	QuorumWait time.Duration
	Logger     *slog.Logger
	// Registerer registers the metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// DefaultLeaseTTL is the default lease: a dead node's partitions are
// served again about this long after it died (kill -9: p50 1.7 s in
// BenchmarkFailover). A holder rewrites its leases every TTL/3 (500 ms)
// and stops believing in one TTL−10% after writing it: a rewrite has
// about 650 ms to be stored before its holder lets it lapse, which a
// healthy loaded R3 cluster keeps (TestKillFailover counts the leases
// lost on live nodes: none).
const DefaultLeaseTTL = 1500 * time.Millisecond

// DefaultConfig returns the defaults: 64 partitions, leases of 1.5 s.
func DefaultConfig() Config {
	return Config{
		Bucket: DefaultBucket, Replicas: 1, Partitions: 64, LeaseTTL: DefaultLeaseTTL,
		Tick: 100 * time.Millisecond, OpTimeout: 2 * time.Second, ReleaseTimeout: 5 * time.Second,
	}
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ErrConfig is returned (wrapped) when a Config is not usable.
var ErrConfig = errors.New("placement: bad config")

// Validate reports the first unusable field.
func (c Config) Validate() error {
	switch {
	case !nodeIDPattern.MatchString(c.NodeID):
		return fmt.Errorf("%w: node_id %q: 1..64 of [A-Za-z0-9_-]", ErrConfig, c.NodeID)
	case c.Bucket == "":
		return fmt.Errorf("%w: bucket is empty", ErrConfig)
	case c.Partitions < 1 || c.Partitions > 4096:
		return fmt.Errorf("%w: partitions %d: 1..4096", ErrConfig, c.Partitions)
	case c.LeaseTTL < time.Second:
		return fmt.Errorf("%w: lease_ttl %s: at least 1s", ErrConfig, c.LeaseTTL)
	case c.Tick <= 0 || c.Tick > c.LeaseTTL/3:
		return fmt.Errorf("%w: tick %s: > 0 and at most lease_ttl/3", ErrConfig, c.Tick)
	case c.OpTimeout <= 0 || c.ReleaseTimeout <= 0:
		return fmt.Errorf("%w: op_timeout and release_timeout must be > 0", ErrConfig)
	case c.QuorumWait < 0:
		return fmt.Errorf("%w: quorum_wait %s: at least 0", ErrConfig, c.QuorumWait)
	}
	return nil
}

// margin is how much earlier than the server a node stops believing in its
// lease: clock-rate differences and the time the write took to be stored
// both count against the lease's holder, never for it.
func (c Config) margin() time.Duration { return c.LeaseTTL / 10 }

// refreshEvery is how often a held lease (and the heartbeat) is rewritten.
func (c Config) refreshEvery() time.Duration { return c.LeaseTTL / 3 }
