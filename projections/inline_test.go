package projections

import (
	"bytes"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// checkInlineRule checks the bm25_terms rule: a term's postings are inline
// exactly when their blocks take at most inlinePostingsMax bytes so, and an
// inline term has no bm25_postings key. It returns the number of inline
// terms.
func checkInlineRule(t *testing.T, s *Store) int {
	t.Helper()
	inlineTerms := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		post := tx.Bucket(bucketBM25Postings).Cursor()
		return tx.Bucket(bucketBM25Terms).ForEach(func(tk, tv []byte) error {
			df, inline, err := parseTermValue(tv, nil)
			if err != nil || df == 0 {
				return fmt.Errorf("term %q: value %x: %v", tk, tv, err)
			}
			group := append(bytes.Clone(tk), sep)
			var blocks []postingBlock
			for k, v := post.Seek(group); k != nil && bytes.HasPrefix(k, group); k, v = post.Next() {
				blocks = append(blocks, postingBlock{beU64(k[len(k)-8:]), v})
			}
			switch {
			case inline != nil && len(blocks) > 0:
				return fmt.Errorf("term %q inline and with %d blocks", tk, len(blocks))
			case inline != nil && inlineSize(inline) > inlinePostingsMax:
				return fmt.Errorf("term %q: %d bytes inline", tk, inlineSize(inline))
			case inline == nil && len(blocks) == 0:
				return fmt.Errorf("term %q: df %d and no postings", tk, df)
			case inline == nil && inlineSize(blocks) <= inlinePostingsMax:
				return fmt.Errorf("term %q: %d blocks of %d bytes not inline", tk, len(blocks), inlineSize(blocks))
			}
			if inline != nil {
				inlineTerms++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return inlineTerms
}

// TestEraseInlinesWhatIsLeft: "zebra" is in a message of session b and,
// more than a block of doc ids later, in many of session a, so its postings
// take bm25_postings blocks; erasing a leaves b's posting alone, which
// moves into the term's bm25_terms value. Terms only a held are gone.
// Search finds b's message after.
func TestEraseInlinesWhatIsLeft(t *testing.T) {
	l := newScopeLog(t)
	l.create("a", "u", "ag")
	l.create("b", "u", "ag")
	l.appendMsgs("b", "zebra crossing")
	for i := range 1 << postingBlockShift {
		l.appendMsgs("a", fmt.Sprintf("filler%d words", i))
	}
	for i := range 20 {
		l.appendMsgs("a", fmt.Sprintf("zebra onlyina %d", i))
	}
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	checkInlineRule(t, s)
	twoBlocks := func() int {
		n := 0
		_ = s.db.View(func(tx *bolt.Tx) error {
			p := postingPrefix("u", "zebra")
			c := tx.Bucket(bucketBM25Postings).Cursor()
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
				n++
			}
			return nil
		})
		return n
	}
	if n := twoBlocks(); n != 2 {
		t.Fatalf("zebra has %d bm25_postings blocks before the erasure, want 2", n)
	}
	if checkInlineRule(t, s) == 0 {
		t.Fatal("no inline term before the erasure")
	}
	var removed []uint64
	for _, r := range l.recs {
		if r.Subject == events.SessionSubject("a") {
			removed = append(removed, r.Seq)
		}
	}
	l.record(events.KindRemoval, "r1", &memoryv1.LogRemoval{
		Id: "r1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:a",
		Subjects: []string{events.SessionSubject("a")},
		Removed:  events.RemovalSpans(events.Spans(removed)),
		Erased:   []string{"session.a"},
		Messages: uint64(len(removed)),
	})
	mustApply(t, s, l.recs[len(l.recs)-1:])
	if n := twoBlocks(); n != 0 {
		t.Fatalf("zebra has %d bm25_postings blocks after the erasure, want 0 (inline)", n)
	}
	if checkInlineRule(t, s) == 0 {
		t.Fatal("no inline term after the erasure")
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketBM25Terms).Get(termKey("u", "onlyina")); v != nil {
			return fmt.Errorf("term of the erased session only still there: %x", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search("b", memoryv1.SearchScope_SEARCH_SCOPE_USER, "zebra", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].GetSessionId() != "b" {
		t.Fatalf("zebra after the erasure: %v", hits)
	}
}

// TestInlineRuleHolds: the rule holds in a file written by many small
// transactions and in its rebuild from the same records in one.
func TestInlineRuleHolds(t *testing.T) {
	l := newLogBuilder(t)
	for i := range 5 {
		l.create(fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i%2), "")
	}
	for i := range 600 {
		l.appendMsgs(fmt.Sprintf("s%d", i%5), fmt.Sprintf("common word%d rare%d", i%7, i), fmt.Sprintf("common again%d", i%300))
	}
	live := openTestStore(t)
	for i := 0; i < len(l.recs); i += 3 {
		mustApply(t, live, l.recs[i:min(i+3, len(l.recs))])
	}
	one := openTestStore(t)
	mustApply(t, one, l.recs)
	a, b := checkInlineRule(t, live), checkInlineRule(t, one)
	if a == 0 || a != b {
		t.Fatalf("inline terms: %d live, %d in one transaction", a, b)
	}
}
