package projections

import (
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// entryPending buffers the writes of a transaction to the scope entries'
// BM25 index (entry_postings, entry_terms, entry_stats) and writes them at
// flush, each bucket in key order and each key once.
//
// Indexing a document puts one posting per distinct term and bumps that
// term's document frequency; replacing it deletes as many. Done directly,
// these are random inserts and deletes all over the buckets (quadratic in
// bbolt's node size within a transaction, see sortedPuts), and a read of
// each df before its write. Buffered, a transaction of many documents
// touches each page once, in order. The content is the same: the postings
// put and not deleted, and each df and statistic plus the sum of its
// changes (a key whose count reaches 0 is deleted, as before).
//
// Nothing reads these buckets back within the transaction: unindex finds a
// document's terms in entry_docs, which is written directly.
type entryPending struct {
	postings map[string][]byte   // posting key → value; nil: delete
	df       map[string]int64    // entry_terms key → change of its df
	stats    map[string][2]int64 // entry_stats key → change of docs, total length
}

func (p *entryPending) init() {
	if p.postings == nil {
		p.postings = make(map[string][]byte)
		p.df = make(map[string]int64)
		p.stats = make(map[string][2]int64)
	}
}

// addPosting buffers the posting k → v of a new document.
func (p *entryPending) addPosting(k, v, termKey []byte) {
	p.init()
	p.postings[string(k)] = v
	p.df[string(termKey)]++
}

// deletePosting buffers the deletion of posting k. A posting added in this
// transaction is dropped instead: doc ids are new (NextSequence), so its key
// was not in the bucket before.
func (p *entryPending) deletePosting(k, termKey []byte) {
	p.init()
	if v, ok := p.postings[string(k)]; ok && v != nil {
		delete(p.postings, string(k))
	} else {
		p.postings[string(k)] = nil
	}
	p.df[string(termKey)]--
}

// addDoc buffers the change of a scope's statistics: docs documents (+1 or
// -1) of total length length.
func (p *entryPending) addDoc(statsKey []byte, docs, length int64) {
	p.init()
	d := p.stats[string(statsKey)]
	p.stats[string(statsKey)] = [2]int64{d[0] + docs, d[1] + length}
}

// flush writes the buffered changes into the buckets and empties p.
func (p *entryPending) flush(bPost, bTerms, bStats *bolt.Bucket) error {
	for _, k := range slices.Sorted(maps.Keys(p.postings)) {
		var err error
		if v := p.postings[k]; v != nil {
			err = bPost.Put([]byte(k), v)
		} else {
			err = bPost.Delete([]byte(k))
		}
		if err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.df)) {
		d := p.df[k]
		if d == 0 {
			continue
		}
		key := []byte(k)
		var err error
		if n := int64(getU64(bTerms, key)) + d; n > 0 {
			err = bTerms.Put(key, u64(uint64(n)))
		} else {
			err = bTerms.Delete(key)
		}
		if err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.stats)) {
		d := p.stats[k]
		if d == [2]int64{} {
			continue
		}
		key := []byte(k)
		docs, total := parseStatsValue(bStats.Get(key))
		var err error
		if n := int64(docs) + d[0]; n > 0 {
			err = bStats.Put(key, statsValue(uint64(n), uint64(max(0, int64(total)+d[1]))))
		} else {
			err = bStats.Delete(key)
		}
		if err != nil {
			return err
		}
	}
	clear(p.postings)
	clear(p.df)
	clear(p.stats)
	return nil
}
