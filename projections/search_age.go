package projections

import (
	"cmp"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Document ids are given in the order the projection applied the
// documents. With the log in one stream that is the stream's order, the
// same in every projection of it. With the log in K > 1 partitions the
// projector applies the K streams concurrently, so two projections of the
// same log (live, caught up after downtime, rebuilt) may number the
// documents of different sessions in different orders; the documents of
// one session (one aggregate, one stream) keep their order.
//
// A search over one session orders by doc id in every layout. A search
// over several sessions (user scope) of a projection of K > 1 partitions
// orders documents by age instead wherever it would compare doc ids (the
// recency boost, ties of equal scores): the message's created time (its
// batch's, set by the actor), then its said time (two messages created at
// once: the one said later is the newer), then its session id, then its
// sequence in the session. That order is a function of the log, the log's
// own wherever the writes' times follow it, whatever order the partitions
// were applied in. With one stream the doc id order is kept, unchanged.

// ageKey orders documents of several sessions independently of the order
// the projection applied them.
type ageKey struct {
	created, said int64
	sid           string
	seq           uint64
}

func (a ageKey) compare(b ageKey) int {
	if c := cmp.Compare(a.created, b.created); c != 0 {
		return c
	}
	if c := cmp.Compare(a.said, b.said); c != 0 {
		return c
	}
	if c := cmp.Compare(a.sid, b.sid); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// docAges reads and caches the age of documents for one search.
type docAges struct {
	docs, msgs, sums *bolt.Bucket
	ages             map[uint64]ageKey
	err              error // the first read that failed
}

func newDocAges(tx *bolt.Tx) *docAges {
	return &docAges{
		docs: tx.Bucket(bucketBM25Docs), msgs: tx.Bucket(bucketSwapMessages), sums: tx.Bucket(bucketSwapSummaries),
		ages: make(map[uint64]ageKey),
	}
}

// age returns document id's age key; a failed read is kept in a.err (and
// ranks the document by its id alone).
func (a *docAges) age(id uint64) ageKey {
	if k, ok := a.ages[id]; ok {
		return k
	}
	k, err := a.read(id)
	if err != nil && a.err == nil {
		a.err = err
	}
	a.ages[id] = k
	return k
}

func (a *docAges) read(id uint64) (ageKey, error) {
	dv := a.docs.Get(u64(id))
	_, seq, sid, err := parseDocValue(dv)
	if err != nil {
		return ageKey{seq: id}, err
	}
	if seq == summaryDocMark {
		sum, err := getSummaryDoc(a.sums, dv)
		if err != nil {
			return ageKey{sid: sid, seq: id}, err
		}
		return ageKey{sid: sid, seq: sum.GetLastSeq()}, nil
	}
	v := a.msgs.Get(swapMessageKey(sid, seq))
	if v == nil {
		return ageKey{sid: sid, seq: seq}, fmt.Errorf("projections: bm25 doc %d points to missing message %s/%d", id, sid, seq)
	}
	created, said, err := messageTimes(v)
	if err != nil {
		return ageKey{sid: sid, seq: seq}, fmt.Errorf("projections: stored message %s/%d: %w", sid, seq, err)
	}
	return ageKey{created: created, said: said, sid: sid, seq: seq}, nil
}

// older reports whether document x is older than document y.
func (a *docAges) older(x, y uint64) bool { return a.age(x).compare(a.age(y)) < 0 }

// compareDocs orders two doc ids, oldest first: by age when the ranker
// orders by age (ranker.ages), else by id.
func (r *ranker) compareDocs(x, y uint64) int {
	if r.ages == nil || x == y {
		return cmp.Compare(x, y)
	}
	return r.ages.age(x).compare(r.ages.age(y))
}

// newTop is swap.NewTopK, ties ranked by compareDocs.
func (r *ranker) newTop(k int) *swap.TopK {
	if r.ages == nil {
		return swap.NewTopK(k)
	}
	return swap.NewTopKBy(k, r.ages.older)
}

// The field numbers of Message.created_unix_nano and said_unix_nano.
var (
	messageCreatedField = (&memoryv1.Message{}).ProtoReflect().Descriptor().Fields().ByName("created_unix_nano").Number()
	messageSaidField    = (&memoryv1.Message{}).ProtoReflect().Descriptor().Fields().ByName("said_unix_nano").Number()
)

// messageTimes returns created_unix_nano and said_unix_nano of an encoded
// Message without decoding the rest (the last occurrence wins, as
// proto.Unmarshal).
func messageTimes(v []byte) (created, said int64, err error) {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		v = v[n:]
		if (num == messageCreatedField || num == messageSaidField) && typ == protowire.VarintType {
			x, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return 0, 0, protowire.ParseError(n)
			}
			if num == messageCreatedField {
				created = int64(x)
			} else {
				said = int64(x)
			}
			v = v[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, v)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		v = v[n:]
	}
	return created, said, nil
}
