package sharedmem

import (
	"bytes"
	"strings"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// MaxIndexedValueBytes is the most bytes of an entry's value that search
// indexes (projections' BM25 index of scope entries). The rest of a larger
// value is stored, versioned and returned by every read like the first part,
// but its words are not searchable. It bounds the work of indexing one
// entry (a 100 KB value costs what an 8 KB one does) so that large values
// never hold the projection of the writes behind them for long.
const MaxIndexedValueBytes = 8 << 10

// Textual reports whether a value of content type ct is indexed as text:
// empty, text/*, application/json (case-insensitive, parameters such as
// "; charset=" ignored). Other values (images, binary protobuf, ...) are
// not searchable at all.
func Textual(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "" || strings.HasPrefix(mt, "text/") || mt == "application/json"
}

// SearchableValue returns the part of an original value that search
// indexes, and how many bytes of the value are past it. A value of a
// content type that is not Textual has no searchable part (and 0 bytes past
// it: it was never meant to be searched). A textual value longer than
// MaxIndexedValueBytes is cut at the last whitespace within the cap, so no
// word is cut in two (at the last UTF-8 boundary within it when the cap
// holds no whitespace).
func SearchableValue(contentType string, value []byte) (indexed []byte, unindexed int) {
	if !Textual(contentType) {
		return nil, 0
	}
	if len(value) <= MaxIndexedValueBytes {
		return value, 0
	}
	n := MaxIndexedValueBytes
	if i := bytes.LastIndexAny(value[:n+1], " \t\r\n"); i > 0 {
		n = i
	} else {
		n = len(utf8cut.Prefix(value, n))
	}
	return value[:n], len(value) - n
}

// Unindexed is the unindexed count of SearchableValue for entry e, which
// must hold its original value (Plain); 0 for a tombstone, which search
// does not index at all.
func Unindexed(e *memoryv1.Entry) uint32 {
	if e.GetDeleted() {
		return 0
	}
	_, n := SearchableValue(e.GetContentType(), e.GetValue())
	return uint32(n)
}
