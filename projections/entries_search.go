package projections

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// searchNow is the clock of SearchEntries' expiry filter (tests replace it).
var searchNow = time.Now

// SearchEntries ranks the live entries of ONE scope (aggregateKind is the log
// kind, "session_scope" for session scopes; see ScopeLogKind) against
// req.query with BM25 (swap.DefaultBM25, idf and avgdl of that scope's
// documents) and returns at most req.limit hits (1..20, 0 means 10), best
// first (ties: the older document first).
//
// Filters: memory_type (UNSPECIFIED = any) and tags (every tag of the
// request must be on the entry). Entries past their expiry
// (0 < expires_unix_nano <= now) are not returned, even before their
// tombstone is projected. Each hit carries the current Entry with its
// ORIGINAL value (compressed=false), never the stored compressed form.
//
// Any query string is accepted (no query syntax: quotes, '*', AND/OR/NOT and
// ':' are plain text or punctuation). A query without any term, a scope
// the projection does not know, or no match returns no hits and no error.
// A scope never sees another scope's entries: postings, document
// frequencies and statistics are all keyed by the scope. An invalid kind,
// scope id, limit or memory type is an *ArgumentError.
func (s *Store) SearchEntries(aggregateKind, scopeID string, req *memoryv1.SearchEntriesRequest) ([]*memoryv1.EntryHit, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, nil); err != nil {
		return nil, err
	}
	limit, err := resolveLimit(int(req.GetLimit()), DefaultSearchLimit, MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	mt := req.GetMemoryType()
	if _, ok := memoryv1.MemoryType_name[int32(mt)]; !ok {
		return nil, &ArgumentError{Field: "memory_type", Reason: fmt.Sprintf("unknown memory type %d", mt)}
	}
	hits := []*memoryv1.EntryHit{}
	now := searchNow().UnixNano()
	err = s.view(func(tx *bolt.Tx) error {
		scope := scopeKey(aggregateKind, scopeID)
		n, total := parseStatsValue(tx.Bucket(bucketEntryStats).Get(entryStatsKey(scope)))
		if n == 0 {
			return nil // an empty scope: no need to read the query
		}
		terms := swap.QueryTerms(req.GetQuery())
		if len(terms) == 0 {
			return nil
		}
		avgdl := float64(total) / float64(n)
		bm := swap.DefaultBM25()
		bTerms := tx.Bucket(bucketEntryTerms)
		scores := make(map[uint64]float64)
		c := tx.Bucket(bucketEntryPostings).Cursor()
		for _, t := range terms {
			if len(t) > 255 || strings.IndexByte(t, sep) >= 0 {
				continue
			}
			df := getU64(bTerms, entryTermKey(scope, t))
			if df == 0 {
				continue
			}
			idf := bm.IDF(n, df)
			p := entryPostingPrefix(scope, t)
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if len(k) != len(p)+8 {
					return fmt.Errorf("projections: malformed entry posting key %q", k)
				}
				tf, docLen, err := parseEntryPostingValue(v)
				if err != nil {
					return err
				}
				scores[beU64(k[len(p):])] += bm.TermScore(tf, docLen, avgdl, idf)
			}
		}
		if len(scores) == 0 {
			return nil
		}
		// Every candidate in rank order; filters are checked on the entries
		// while walking it, until limit hits pass.
		top := swap.NewTopK(len(scores))
		for id, sc := range scores {
			top.Offer(swap.Hit{DocID: id, Score: sc})
		}
		refPrefix := append(slices.Clip(scope), sep)
		docs, entries := tx.Bucket(bucketEntryDocs), tx.Bucket(bucketEntries)
		for _, h := range top.Sorted() {
			if len(hits) == limit {
				break
			}
			dv := docs.Get(u64(h.DocID))
			if dv == nil {
				return fmt.Errorf("projections: entry posting names missing document %d", h.DocID)
			}
			doc, err := parseEntryDocValue(dv, false)
			if err != nil {
				return err
			}
			if !bytes.HasPrefix(doc.ref, refPrefix) {
				return fmt.Errorf("projections: document %d of %q indexed in scope %q", h.DocID, doc.ref, scope)
			}
			v := entries.Get(doc.ref)
			if v == nil {
				return fmt.Errorf("projections: document %d names missing entry %q", h.DocID, doc.ref)
			}
			e := new(memoryv1.Entry)
			if err := proto.Unmarshal(v, e); err != nil {
				return fmt.Errorf("projections: stored entry %q: %w", doc.ref, err)
			}
			if e.GetVersion() != doc.version || e.GetDeleted() {
				return fmt.Errorf("projections: document %d indexes version %d of %q, current is %d (deleted=%v)",
					h.DocID, doc.version, doc.ref, e.GetVersion(), e.GetDeleted())
			}
			if !entryMatches(e, mt, req.GetTags(), now) {
				continue
			}
			plain, err := sharedmem.Plain(e)
			if err != nil {
				return fmt.Errorf("projections: stored entry %q: %w", doc.ref, err)
			}
			hits = append(hits, &memoryv1.EntryHit{Entry: plain, Score: h.Score, UnindexedBytes: sharedmem.Unindexed(plain)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// entryMatches applies the memory type, tags and expiry filters.
func entryMatches(e *memoryv1.Entry, mt memoryv1.MemoryType, tags []string, now int64) bool {
	if mt != memoryv1.MemoryType_MEMORY_TYPE_UNSPECIFIED && e.GetMemoryType() != mt {
		return false
	}
	if x := e.GetExpiresUnixNano(); x > 0 && x <= now {
		return false
	}
	for _, t := range tags {
		if !slices.Contains(e.GetTags(), t) {
			return false
		}
	}
	return true
}
