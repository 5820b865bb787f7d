package projections

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Large-data index (DESIGN §6, largedata/doc.go).
//
// Each reference is one aggregate of kind "data" on mem.ev.data.<id>:
// DataStored{ref} (version 1) puts data_refs[id] = ref, DataExpired{id}
// (version 2) deletes it. This index is what survives restarts: the bytes
// themselves are in the object store. The projection checks that the event
// names the subject's id, that DataStored comes once and that DataExpired
// follows a DataStored; any other event type is an *ApplyError.

func (w *writer) applyData(r *Decoded, id string) error {
	if err := checkBatch(r, dataKind, id); err != nil {
		return err
	}
	b := w.tx.Bucket(bucketDataRefs)
	for i, ev := range r.Events {
		var err error
		switch ev := ev.(type) {
		case *memoryv1.DataStored:
			err = putDataRef(b, id, ev.GetRef())
		case *memoryv1.DataExpired:
			switch {
			case ev.GetId() != id:
				err = fmt.Errorf("expiry of data %q on the subject of %q", ev.GetId(), id)
			case b.Get([]byte(id)) == nil:
				err = fmt.Errorf("data %q is not stored", id)
			default:
				err = b.Delete([]byte(id))
			}
		default:
			err = fmt.Errorf("%w: %T is not a data event this projection knows", events.ErrUnknownEventType, ev)
		}
		if err != nil {
			return fmt.Errorf("event %d (%T): %w", i, ev, err)
		}
	}
	return nil
}

func putDataRef(b *bolt.Bucket, id string, ref *memoryv1.DataReference) error {
	switch {
	case ref == nil:
		return errors.New("no reference")
	case ref.GetId() != id:
		return fmt.Errorf("reference %q on the subject of %q", ref.GetId(), id)
	case b.Get([]byte(id)) != nil:
		return fmt.Errorf("data %q is already stored", id)
	}
	v, err := marshalOpts.Marshal(ref)
	if err != nil {
		return err
	}
	return b.Put([]byte(id), v)
}

// DataRef returns the reference of large data id, false if the projection
// does not know it: never stored, expired (DataExpired applied) or not
// projected yet. An invalid id is an *ArgumentError.
func (s *Store) DataRef(id string) (*memoryv1.DataReference, bool, error) {
	if err := events.ValidateID("id", id); err != nil {
		return nil, false, &ArgumentError{Field: "id", Reason: err.Error()}
	}
	var ref *memoryv1.DataReference
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketDataRefs).Get([]byte(id))
		if v == nil {
			return nil
		}
		ref = new(memoryv1.DataReference)
		if err := proto.Unmarshal(v, ref); err != nil {
			return fmt.Errorf("projections: stored data reference %q: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return ref, ref != nil, nil
}

// DataRefs lists the references not expired whose id starts with prefix
// ("" = all), sorted by id, at most limit of them (1..100, 0 means 50).
func (s *Store) DataRefs(prefix string, limit int) ([]*memoryv1.DataReference, error) {
	limit, err := resolveLimit(limit, DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, err
	}
	out := []*memoryv1.DataReference{}
	err = s.view(func(tx *bolt.Tx) error {
		p := []byte(prefix)
		c := tx.Bucket(bucketDataRefs).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
			ref := new(memoryv1.DataReference)
			if err := proto.Unmarshal(v, ref); err != nil {
				return fmt.Errorf("projections: stored data reference %q: %w", k, err)
			}
			out = append(out, ref)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
