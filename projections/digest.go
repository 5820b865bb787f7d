package projections

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Document ids (bm25_docs, entry_docs) come from their buckets' sequences
// in application order, so an erasure (erase.go) leaves holes a Rebuild of
// the same log does not have. Digest hashes the buckets that hold document
// ids with each id replaced by its rank among the documents held (the
// order is the same, only the numbers differ): live and rebuilt read
// models compare equal after an erasure too.

//
// With the log in K > 1 partitions the order of the ids is itself the
// order the projector applied the partitions in (search_age.go), which
// differs between a live and a rebuilt projection; only the documents of
// one session (bm25_docs) or one entry (entry_docs) keep their order.
// Digest then ranks the documents by their owner (session id, entry key),
// then id, and hashes bm25_docs, entry_docs and each term's postings in
// that rank order: canonical, whatever the interleaving.

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

// docOwner returns the owner of a document of bucket (bm25_docs: its
// session; entry_docs: its entry key), which orders the documents of a
// projection of partitions (above).
func docOwner(bucket, v []byte) (string, error) {
	if bytes.Equal(bucket, bucketEntryDocs) {
		d, err := parseEntryDocValue(v, false)
		return string(d.ref), err
	}
	_, _, sid, err := parseDocValue(v)
	return sid, err
}

// ownerRanks maps each document id of bucket to its rank by (owner, id).
func ownerRanks(tx *bolt.Tx, bucket []byte) (map[uint64]uint64, error) {
	type doc struct {
		owner string
		id    uint64
	}
	var docs []doc
	err := tx.Bucket(bucket).ForEach(func(k, v []byte) error {
		o, err := docOwner(bucket, v)
		docs = append(docs, doc{o, beU64(k)})
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(docs, func(a, b doc) int {
		if c := cmp.Compare(a.owner, b.owner); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	ranks := make(map[uint64]uint64, len(docs))
	for i, d := range docs {
		ranks[d.id] = uint64(i)
	}
	return ranks, nil
}

// rankedParts are the parts of one or more records each under a rank,
// hashed in rank order (canonical digests).
type rankedParts struct {
	recs []rankedRec
}

type rankedRec struct {
	rank  uint64
	parts [][]byte
}

func (p *rankedParts) add(rank uint64, parts ...[]byte) {
	c := make([][]byte, len(parts))
	for i, b := range parts {
		c[i] = bytes.Clone(b)
	}
	p.recs = append(p.recs, rankedRec{rank, c})
}

// flush hashes the records in rank order and empties p.
func (p *rankedParts) flush(d *digestWriter) {
	slices.SortStableFunc(p.recs, func(a, b rankedRec) int { return cmp.Compare(a.rank, b.rank) })
	for _, r := range p.recs {
		for _, b := range r.parts {
			d.part(b)
		}
	}
	p.recs = p.recs[:0]
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
// by rank (see above). canonical (a projection of partitions) hashes the
// documents and each term's postings in rank order; otherwise rank order
// is id order, the order they are stored in.
func digestBucket(tx *bolt.Tx, name string, ranks func(bucket []byte) map[uint64]uint64, canonical bool) ([]byte, error) {
	d := &digestWriter{h: sha256.New()}
	b := tx.Bucket([]byte(name))
	rank := func(bucket []byte, id uint64) []byte { return u64(ranks(bucket)[id]) }
	var sorted rankedParts
	var err error
	switch name {
	case string(bucketBM25Docs), string(bucketEntryDocs):
		err = b.ForEach(func(k, v []byte) error {
			if canonical {
				r := ranks([]byte(name))[beU64(k)]
				sorted.add(r, u64(r), v)
				return nil
			}
			d.part(rank([]byte(name), beU64(k)))
			d.part(v)
			return nil
		})
		sorted.flush(d)
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
				if canonical {
					r := ranks(bucketBM25Docs)[p.docID]
					sorted.add(r, group, u64(r), u64(uint64(p.tf)<<32|uint64(p.docLen)), dec.sessions[p.session])
					continue
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
				sorted.flush(d)
				return nil
			}
			for k, v := c.Seek(group); k != nil && bytes.HasPrefix(k, group); k, v = c.Next() {
				if err := emit(group, beU64(k[len(k)-8:]), v); err != nil {
					return err
				}
			}
			sorted.flush(d) // the term's postings, in rank order
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
