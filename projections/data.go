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

// Large-data index (largedata/doc.go).
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
	b, owners := w.tx.Bucket(bucketDataRefs), w.tx.Bucket(bucketDataBytes)
	for i, ev := range r.Events {
		var err error
		switch ev := ev.(type) {
		case *memoryv1.DataStored:
			err = putDataRef(b, id, ev.GetRef())
			if err == nil {
				err = addDataBytes(owners, ev.GetRef().GetOwner(), int64(ev.GetRef().GetSize()))
			}
		case *memoryv1.DataExpired:
			v := b.Get([]byte(id))
			ref := new(memoryv1.DataReference)
			switch {
			case ev.GetId() != id:
				err = fmt.Errorf("expiry of data %q on the subject of %q", ev.GetId(), id)
			case v == nil:
				err = fmt.Errorf("data %q is not stored", id)
			default:
				if err = proto.Unmarshal(v, ref); err == nil {
					err = addDataBytes(owners, ref.GetOwner(), -int64(ref.GetSize()))
				}
				if err == nil {
					err = b.Delete([]byte(id))
				}
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

// addDataBytes adds n (negative: removes) to owner's bytes in data_bytes.
func addDataBytes(b *bolt.Bucket, owner string, n int64) error {
	k := []byte(owner)
	if len(k) == 0 {
		k = []byte{sep} // unowned data (the single-user node); owners are never "\x00"
	}
	total := int64(getU64(b, k)) + n
	if total <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, u64(uint64(total)))
}

// DataBytes is the sum of the sizes of owner's large data the projection
// holds (stored, not expired). It lags the log by what the projector has not
// applied yet.
func (s *Store) DataBytes(owner string) (int64, error) {
	k := []byte(owner)
	if len(k) == 0 {
		k = []byte{sep}
	}
	var n uint64
	err := s.view(func(tx *bolt.Tx) error {
		n = getU64(tx.Bucket(bucketDataBytes), k)
		return nil
	})
	return int64(n), err
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
