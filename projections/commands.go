package projections

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// indexCommand records r's command in bucketCommands (a record without a
// batch or a command id records nothing).
func (w *writer) indexCommand(r *Decoded) error {
	b := r.Batch
	if b == nil || b.GetCommandId() == "" {
		return nil
	}
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil {
		return err
	}
	key := events.CommandKey(b.GetActorId(), b.GetCommandId())
	return w.commands.put(commandKey(kind, id, key), commandValue(r.Seq, b.GetVersion(), b.GetCommandDigest()))
}

// LookupCommand returns the stored result of the command key
// (events.CommandKey) on aggregate kind/id, as far as the projection has
// applied the log (AppliedSeq).
func (s *Store) LookupCommand(kind, id, key string) (*memoryv1.CommandResult, bool, error) {
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	var (
		res   *memoryv1.CommandResult
		found bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCommands).Get(commandKey(kind, id, key))
		if v == nil {
			return nil
		}
		seq, version, digest, err := parseCommandValue(v)
		if err != nil {
			return fmt.Errorf("command %s/%s %q: %w", kind, id, key, err)
		}
		res, found = &memoryv1.CommandResult{CommandId: key, Version: version, Seq: seq, Digest: digest}, true
		return nil
	})
	return res, found, err
}
