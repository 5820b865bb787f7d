package segmented

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts the tokens of a text. Implementations must be
// deterministic and safe for concurrent use.
type Tokenizer interface {
	Count(text string) int
}

// MessageOverheadTokens is added to every message (and every rendered ROM,
// Kernel or summary item) for the role and framing tokens of the chat format.
const MessageOverheadTokens = 4

var (
	tokOnce sync.Once
	tokVal  Tokenizer
	tokErr  error
)

// cl100k is the offline cl100k_base tokenizer. Its vocabulary is compiled
// into github.com/tiktoken-go/tokenizer: nothing is downloaded at run time.
type cl100k struct {
	codec  tokenizer.Codec
	pieces pieceCounts
}

var _ Tokenizer = (*cl100k)(nil)

// NewTokenizer returns the offline cl100k_base tokenizer. The codec is built
// once per process (building it is slow) and shared; it is safe for
// concurrent use. If the codec cannot be built, or fails its self-check, an
// error is returned: there is no fallback to a character-based estimate.
func NewTokenizer() (Tokenizer, error) {
	tokOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				tokVal, tokErr = nil, fmt.Errorf("segmented: loading cl100k_base: %v", r)
			}
		}()
		c, err := tokenizer.Get(tokenizer.Cl100kBase)
		if err != nil {
			tokErr = fmt.Errorf("segmented: loading cl100k_base: %w", err)
			return
		}
		t := &cl100k{codec: c}
		// Self-check against a known count, so a broken vocabulary fails
		// loudly here instead of skewing every budget.
		if n := t.Count("hello world"); n != 2 {
			tokErr = fmt.Errorf("segmented: cl100k_base self-check: \"hello world\" = %d tokens, want 2", n)
			return
		}
		tokVal = t
	})
	return tokVal, tokErr
}

// Count returns the number of cl100k_base tokens in text. Plain text
// (printable ASCII, tab, CR, LF) is cut into the codec's pieces without its
// regexp and each piece is counted once by the codec and kept (at most
// pieceCountsMax pieces per process, a few MB; see tokenizer_split.go);
// other text is counted by the codec. The codec only fails on a regexp
// match timeout, which it does not set, so an error cannot happen; if it
// ever did, the tokens counted so far are returned.
func (t *cl100k) Count(text string) int {
	if text == "" {
		return 0
	}
	if !plainText(text) {
		n, _ := t.codec.Count(text)
		return n
	}
	total, pieces, missed, kept := t.pieces.sum(text)
	if len(missed) == 0 {
		return total
	}
	if kept >= warmPieces && len(missed) > missesAlone && 2*len(missed) > pieces {
		// Mostly pieces not seen although many were (ids, hashes, encoded
		// data): counting them one by one costs more than the codec on the
		// whole text.
		n, _ := t.codec.Count(text)
		return n
	}
	for _, piece := range missed {
		// Looked up again: the same piece may be missed twice in text, and
		// is counted by the codec once.
		n, ok := t.pieces.get(piece)
		if !ok {
			n, _ = t.codec.Count(piece)
			// A clone: the piece would keep the whole text alive.
			t.pieces.put(strings.Clone(piece), n)
		}
		total += n
	}
	return total
}
