package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// SnapshotBucket is the default KV bucket of aggregate snapshots.
const SnapshotBucket = "MEM_SNAPSHOTS"

// SnapshotStore keeps the latest snapshot of each aggregate. A snapshot is an
// optimisation: losing one only makes the next activation replay more.
type SnapshotStore interface {
	// Put replaces the snapshot stored under key.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the snapshot under key; ok is false if there is none.
	Get(ctx context.Context, key string) (data []byte, ok bool, err error)
	// Delete removes the snapshot under key (an erased aggregate); none is
	// not an error.
	Delete(ctx context.Context, key string) error
}

// SnapshotKey is the snapshot key of an aggregate: "<kind>.<id>", e.g.
// "session.abc". Kind and id must be valid (ValidateID).
func SnapshotKey(kind, id string) string { return kind + "." + id }

// KVSnapshotStore is a SnapshotStore on a JetStream key-value bucket keeping
// one revision per key.
type KVSnapshotStore struct {
	kv jetstream.KeyValue
}

var _ SnapshotStore = (*KVSnapshotStore)(nil)

// NewKVSnapshotStore creates (or updates) the bucket, history 1, file storage.
func NewKVSnapshotStore(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*KVSnapshotStore, error) {
	if bucket == "" {
		bucket = SnapshotBucket
	}
	if replicas < 1 {
		replicas = 1
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "agentmem aggregate snapshots (latest only)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("events: snapshot bucket %s: %w", bucket, err)
	}
	return &KVSnapshotStore{kv: kv}, nil
}

// Put implements SnapshotStore. It returns once the server stored the value.
func (s *KVSnapshotStore) Put(ctx context.Context, key string, data []byte) error {
	if _, err := s.kv.Put(ctx, key, data); err != nil {
		return fmt.Errorf("events: put snapshot %s: %w", key, err)
	}
	return nil
}

// Get implements SnapshotStore.
func (s *KVSnapshotStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("events: get snapshot %s: %w", key, err)
	}
	return e.Value(), true, nil
}

// Delete implements SnapshotStore with a purge of the key: the bucket
// keeps a content-free marker, and no revision of the value.
func (s *KVSnapshotStore) Delete(ctx context.Context, key string) error {
	if err := s.kv.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("events: delete snapshot %s: %w", key, err)
	}
	return nil
}
