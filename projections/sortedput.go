package projections

import (
	"bytes"
	"cmp"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// sortedPuts buffers the Puts of one bucket during a transaction and writes
// them in key order at flush.
//
// bbolt does not split nodes before the commit: random inserts into a bucket
// make the leaf nodes they touch grow, and every insert in the middle of a
// node moves its tail, so a large transaction of keys in random order
// (messages of many sessions, each appended after that session's previous
// ones) costs time quadratic in the node size. Writing the same keys sorted
// touches each node once and in order. The content is the same: the same
// keys and values, and for a key put twice the last value (stable sort, Puts
// in order).
//
// Only buckets that the transaction does not read back before flush use it.
type sortedPuts struct {
	kvs    []keyValue
	sorted bool // kvs are in key order (sort ran, nothing put since)
}

// keyValue is a buffered Put; i is its position among the Puts, the tie
// break that keeps a key put twice in order (an unstable sort with a total
// order, about twice as fast as a stable one on a Rebuild chunk).
type keyValue struct {
	k, v []byte
	i    int
}

// put checks what bbolt's Put checks (so that a bad key fails the record
// that carries it, as a direct Put did) and buffers the pair. k and v must
// stay unmodified until flush.
func (s *sortedPuts) put(k, v []byte) error {
	switch {
	case len(k) == 0:
		return berrors.ErrKeyRequired
	case len(k) > bolt.MaxKeySize:
		return berrors.ErrKeyTooLarge
	case int64(len(v)) > bolt.MaxValueSize:
		return berrors.ErrValueTooLarge
	}
	s.kvs = append(s.kvs, keyValue{k, v, len(s.kvs)})
	s.sorted = false
	return nil
}

// sort puts the buffered pairs in key order (the order flush writes them
// in). It touches nothing but s, so it can run in another goroutine while
// the transaction writes other buckets.
func (s *sortedPuts) sort() {
	if s.sorted {
		return
	}
	slices.SortFunc(s.kvs, func(a, b keyValue) int {
		if c := bytes.Compare(a.k, b.k); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	s.sorted = true
}

// flush writes the buffered pairs into b, in key order, and empties s.
func (s *sortedPuts) flush(b *bolt.Bucket) error {
	s.sort()
	for _, kv := range s.kvs {
		if err := b.Put(kv.k, kv.v); err != nil {
			return err
		}
	}
	clear(s.kvs)
	s.kvs = s.kvs[:0]
	s.sorted = false
	return nil
}
