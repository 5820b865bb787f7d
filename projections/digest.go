package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	bolt "go.etcd.io/bbolt"
)

// Document ids (bm25_docs, entry_docs) come from their buckets' sequences
// in application order, so an erasure (erase.go) leaves holes a Rebuild of
// the same log does not have. Digest hashes the buckets that hold document
// ids with each id replaced by its rank among the documents held (the
// order is the same, only the numbers differ): live and rebuilt read
// models compare equal after an erasure too.

// docRanks maps each document id of b (keys: u64) to its rank.
func docRanks(b *bolt.Bucket) map[uint64]uint64 {
	ranks := make(map[uint64]uint64)
	var n uint64
	_ = b.ForEach(func(k, _ []byte) error {
		ranks[beU64(k)] = n
		n++
		return nil
	})
	return ranks
}

// digestWriter hashes length-prefixed parts.
type digestWriter struct {
	h hash.Hash
	n [8]byte
}

func (d *digestWriter) part(b []byte) {
	binary.BigEndian.PutUint64(d.n[:], uint64(len(b)))
	d.h.Write(d.n[:])
	d.h.Write(b)
}

// digestBucket returns the SHA-256 of bucket name's content, document ids
// by rank (see above).
func digestBucket(tx *bolt.Tx, name string, ranks func(bucket []byte) map[uint64]uint64) ([]byte, error) {
	d := &digestWriter{h: sha256.New()}
	b := tx.Bucket([]byte(name))
	rank := func(bucket []byte, id uint64) []byte { return u64(ranks(bucket)[id]) }
	var err error
	switch name {
	case string(bucketBM25Docs), string(bucketEntryDocs):
		err = b.ForEach(func(k, v []byte) error {
			d.part(rank([]byte(name), beU64(k)))
			d.part(v)
			return nil
		})
	case string(bucketEntryDocIDs):
		err = b.ForEach(func(k, v []byte) error {
			d.part(k)
			d.part(rank(bucketEntryDocs, beU64(v)))
			return nil
		})
	case string(bucketEntryPostings):
		err = b.ForEach(func(k, v []byte) error {
			d.part(k[:len(k)-8])
			d.part(rank(bucketEntryDocs, beU64(k[len(k)-8:])))
			d.part(v)
			return nil
		})
	case string(bucketBM25Terms):
		err = b.ForEach(func(k, v []byte) error {
			if len(v) < 8 {
				return fmt.Errorf("%w: bm25 term value of %d bytes", ErrCorrupt, len(v))
			}
			d.part(k)
			d.part(v[:8]) // df; where the postings are is the next bucket's
			return nil
		})
	case string(bucketBM25Postings):
		// Per term (bm25_terms order, which is the order of these keys), its
		// postings, inline or in blocks: where they are stored follows the
		// doc ids, which a rebuild of a compacted log assigns differently.
		var dec postingBlockReader
		emit := func(group []byte, block uint64, v []byte) error {
			dec.reset(block, v, nil)
			for {
				p, ok, err := dec.next()
				if err != nil || !ok {
					return err
				}
				d.part(group)
				d.part(rank(bucketBM25Docs, p.docID))
				d.part(u64(uint64(p.tf)<<32 | uint64(p.docLen)))
				d.part(dec.sessions[p.session])
			}
		}
		c := b.Cursor()
		var blocks []postingBlock
		err = tx.Bucket(bucketBM25Terms).ForEach(func(tk, tv []byte) error {
			group := append(bytes.Clone(tk), sep)
			_, inline, err := parseTermValue(tv, blocks[:0])
			if err != nil {
				return err
			}
			if inline != nil {
				blocks = inline
				for _, ib := range inline {
					if err := emit(group, ib.block, ib.v); err != nil {
						return err
					}
				}
				return nil
			}
			for k, v := c.Seek(group); k != nil && bytes.HasPrefix(k, group); k, v = c.Next() {
				if err := emit(group, beU64(k[len(k)-8:]), v); err != nil {
					return err
				}
			}
			return nil
		})
	default:
		err = b.ForEach(func(k, v []byte) error {
			d.part(k)
			d.part(v)
			return nil
		})
	}
	return d.h.Sum(nil), err
}
