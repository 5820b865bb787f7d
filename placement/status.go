package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketFor is the placement bucket of the log stream named stream.
func BucketFor(stream string) string {
	return stream + "_PLACEMENT"
}

// Lease is one partition's lease as the bucket holds it.
type Lease struct {
	Partition int
	Owner     string
	// Age is how long ago the owner last wrote it (a live owner rewrites
	// it every TTL/3).
	Age time.Duration
}

// Status is the placement as the bucket holds it.
type Status struct {
	TTL    time.Duration
	Nodes  []NodeInfo
	Leases []Lease // held partitions, by partition
}

// ErrNoBucket is returned by ReadStatus when the placement bucket does not
// exist (no node ran on this log yet).
var ErrNoBucket = errors.New("placement: no placement bucket")

// ReadStatus reads the nodes' heartbeats and the partitions' leases.
func ReadStatus(ctx context.Context, js jetstream.JetStream, bucket string) (*Status, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, ErrNoBucket
	}
	if err != nil {
		return nil, fmt.Errorf("placement: bucket %s: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("placement: bucket %s: %w", bucket, err)
	}
	nodes, leases, err := readBucket(ctx, kv, true)
	if err != nil {
		return nil, err
	}
	return &Status{TTL: st.TTL(), Nodes: nodes, Leases: leases}, nil
}

// readBucket reads the nodes' heartbeats (one that does not decode is
// skipped) and, withLeases, the partitions' leases: the keys are listed,
// then each is read (one aged out meanwhile is skipped).
func readBucket(ctx context.Context, kv jetstream.KeyValue, withLeases bool) (nodes []NodeInfo, leases []Lease, err error) {
	lister, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("placement: list %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = lister.Stop() }()
	now := time.Now()
	for k := range lister.Keys() {
		p, node := parseKey(k)
		if node == "" && (p < 0 || !withLeases) {
			continue
		}
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // aged out meanwhile
		}
		if node != "" {
			var info NodeInfo
			if json.Unmarshal(e.Value(), &info) == nil {
				nodes = append(nodes, info)
			}
			continue
		}
		leases = append(leases, Lease{Partition: p, Owner: string(e.Value()), Age: now.Sub(e.Created())})
	}
	return nodes, leases, nil
}
