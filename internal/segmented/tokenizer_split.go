package segmented

import "sync"

// The fast path of cl100k.Count. The codec cuts a text into pieces with the
// cl100k_base pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (a backtracking regexp, most of its cost) and byte-pair-encodes each
// piece. For text of printable ASCII, tab, CR and LF, splitPlain cuts the
// same pieces without the regexp; a piece's count does not depend on what
// is around it (the pattern cuts a piece alone into itself), so counts are
// kept per piece in pieceCounts. Any other text takes the codec's path.
// TestCountFastPathMatchesCodec checks pieces and counts against the codec.

// plainText reports whether text has only bytes splitPlain handles.
func plainText(text string) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; (c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isNL(c byte) bool     { return c == '\n' || c == '\r' }

// isPunct is [^\s\p{L}\p{N}] on plain text.
func isPunct(c byte) bool { return !isSpace(c) && !isLetter(c) && !isDigit(c) }

// splitPlain calls piece with each piece of plain text (see plainText), in
// order, as the cl100k_base pattern cuts it.
func splitPlain(text string, piece func(string)) {
	n := len(text)
	for i := 0; i < n; {
		j := plainPieceEnd(text, i)
		piece(text[i:j])
		i = j
	}
}

// plainPieceEnd returns the end of the piece that starts at i: the first
// alternative of the pattern that matches there.
func plainPieceEnd(s string, i int) int {
	n, c := len(s), s[i]
	run := func(j int, in func(byte) bool) int {
		for j < n && in(s[j]) {
			j++
		}
		return j
	}
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && i+1 < n {
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v', 'l':
			if i+2 < n {
				pair := string([]byte{s[i+1] | 0x20, s[i+2] | 0x20})
				if pair == "re" || pair == "ve" || pair == "ll" {
					return i + 3
				}
			}
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isLetter(c) {
		return run(i+1, isLetter)
	}
	if !isNL(c) && !isDigit(c) && i+1 < n && isLetter(s[i+1]) {
		return run(i+2, isLetter)
	}
	// \p{N}{1,3}
	if isDigit(c) {
		j := i + 1
		for j < n && j < i+3 && isDigit(s[j]) {
			j++
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if c == ' ' && i+1 < n && isPunct(s[i+1]) {
		j++
	}
	if isPunct(s[j]) {
		return run(run(j+1, isPunct), isNL)
	}
	// c is whitespace here. \s*[\r\n]+: up to the last newline of the run.
	end := run(i, isSpace)
	for k := end - 1; k >= i; k-- {
		if isNL(s[k]) {
			return k + 1
		}
	}
	// \s+(?!\S), else \s+ (one character).
	if end == n {
		return end
	}
	return max(end-1, i+1)
}

// Once warmPieces pieces are kept, a text with more than missesAlone pieces
// not kept, and most of its pieces so, is counted by the codec whole
// (nothing kept); before, every new piece is counted alone and kept.
const (
	warmPieces  = 4096
	missesAlone = 16
)

// pieceCountsMax bounds the pieces whose counts are kept; past it the map
// starts over.
const pieceCountsMax = 1 << 16

// pieceCounts keeps the token count of each piece seen (shared by every
// Count call).
type pieceCounts struct {
	mu sync.RWMutex // guards m
	m  map[string]int
}

// sum returns the tokens of the pieces of plain text that are kept, the
// number of pieces, the pieces that are not kept (substrings of text, in
// order) and how many pieces are kept in all.
func (p *pieceCounts) sum(text string) (total, pieces int, missed []string, kept int) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	splitPlain(text, func(piece string) {
		pieces++
		if n, ok := p.m[piece]; ok {
			total += n
		} else {
			missed = append(missed, piece)
		}
	})
	return total, pieces, missed, len(p.m)
}

func (p *pieceCounts) get(piece string) (int, bool) {
	p.mu.RLock()
	n, ok := p.m[piece]
	p.mu.RUnlock()
	return n, ok
}

func (p *pieceCounts) put(piece string, n int) {
	p.mu.Lock()
	if p.m == nil || len(p.m) >= pieceCountsMax {
		p.m = make(map[string]int, 1024)
	}
	p.m[piece] = n
	p.mu.Unlock()
}
