package segmented

import (
	"reflect"
	"strings"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Prepared candidates: the decision runs on the session actor's goroutine
// at every user message, and rendering each candidate's text and counting
// its tokens was most of its cost (tens of candidates, a few µs each).
// What an item shows depends on its source alone (a stored message, an
// entry version), so the node renders and counts each candidate once,
// outside the actor (Candidates.Prepare, through a PrepareMemo kept
// between appends), and the decision reads the results. They are exactly
// what the decision would compute (the same functions, the same
// tokenizer: the decision uses them only when they were counted by its
// own), so a prepared append is decided byte for byte as an unprepared
// one (TestPreparedMatchesUnprepared).

// itemForm is how a candidate is shown.
type itemForm uint8

const (
	formNone      itemForm = iota // not prepared
	formRecalled                  // the session's own message: recalledText, fitted
	formEarlier                   // another session's message: EarlierSessionText, fitted
	formContinued                 // the same under the previous item's header: EarlierContinuedText, fitted
	formMemory                    // a scope entry: memoryText, counted whole
)

// preparedItem is one candidate as the decision needs it: for a message,
// fitItem's result at maxRecalledItemTokens (the bytes of the text it
// shows, and whether it was trimmed); for formMemory the count of the
// whole text (fitted to its room by the decision).
type preparedItem struct {
	form    itemForm
	ok      bool
	trimmed bool
	tokens  uint32
	bytes   uint32
}

// prepared is what Candidates.Prepare computed, by index of Recall and
// Memory, and the tokenizer it counted with.
type prepared struct {
	tok            Tokenizer
	recall, memory []preparedItem
	// bare: BareQuestion of each recall candidate.
	bare []bool
	// memCounts: memoryCounts; memFirst: memoryFirsts of the memory
	// candidates (the tokenizer aside).
	memCounts []int64
	memFirst  []int32
	// memSums: ItemKeySum of each memory candidate (the digest the
	// section and the why record), taken once per key through the memo.
	memSums [][]byte
}

// Prepare renders and counts the candidates c found for session id with
// tok (through memo, when not nil), for a decision counting with the same
// tokenizer. It must be called before c is handed to the decision and not
// concurrently with it.
func (c *Candidates) Prepare(id string, tok Tokenizer, memo *PrepareMemo) {
	if c == nil || tok == nil {
		return
	}
	p := &prepared{tok: tok}
	hits := c.Recall[:min(len(c.Recall), MaxRecallCandidates+MaxEarlierCandidates)]
	p.recall = make([]preparedItem, len(hits))
	p.bare = make([]bool, len(hits))
	mems := c.Memory[:min(len(c.Memory), MaxMemoryCandidates)]
	p.memory = make([]preparedItem, len(mems))
	memo.use(tok)
	for i, m := range hits {
		if m == nil {
			continue
		}
		form, sid := formRecalled, id
		if len(c.RecallSessions) == len(c.Recall) && c.RecallSessions[i] != "" {
			form, sid = formEarlier, c.RecallSessions[i]
		}
		p.recall[i] = memo.message(tok, form, sid, m)
		p.bare[i] = BareQuestion(m)
	}
	p.memCounts = make([]int64, len(mems))
	p.memSums = make([][]byte, len(mems))
	for i, m := range mems {
		p.memory[i], p.memSums[i] = memo.entry(tok, m)
		p.memCounts[i] = int64(p.memory[i].tokens)
	}
	p.memFirst = memoryFirsts(mems, nil)
	c.prep = p
}

// prepareMessage renders and fits message m in form: the item records
// how many bytes of the text it shows and whether it was trimmed (the
// text is rendered again from the message when the context is read).
func prepareMessage(tok Tokenizer, form itemForm, m *memoryv1.Message) preparedItem {
	var full string
	switch form {
	case formEarlier:
		full = EarlierSessionText(m)
	case formContinued:
		full = EarlierContinuedText(m)
	default:
		full = recalledText(m)
	}
	text, tokens, ok := fitItem(tok, full, maxRecalledItemTokens)
	it := preparedItem{form: form, ok: ok, tokens: tokens, bytes: uint32(len(text))}
	if ok && text != full {
		it.bytes, it.trimmed = uint32(len(strings.TrimSuffix(text, "…"))), true
	}
	return it
}

// preparedFor returns what Prepare computed when counted with tok (nil:
// not prepared, or with another tokenizer).
func (c *Candidates) preparedFor(tok Tokenizer) *prepared {
	if c == nil || c.prep == nil || !sameTokenizer(c.prep.tok, tok) {
		return nil
	}
	return c.prep
}

// recallItem returns the prepared item of recall candidate r in form
// (false: not prepared so; p may be nil).
func (p *prepared) recallItem(r int, form itemForm) (preparedItem, bool) {
	if p == nil || r >= len(p.recall) || p.recall[r].form != form {
		return preparedItem{}, false
	}
	return p.recall[r], true
}

// memorySum returns ItemKeySum of memory candidate r, m: as prepared
// (for any tokenizer: the digest depends on the key alone) or taken.
func (c *Candidates) memorySum(r int, m *memoryv1.MemoryItem) []byte {
	if c != nil && c.prep != nil && r < len(c.prep.memSums) && c.prep.memSums[r] != nil {
		return c.prep.memSums[r]
	}
	return ItemKeySum(m)
}

// bareAt reports BareQuestion(m) of recall candidate r, m.
func (c *Candidates) bareAt(r int, m *memoryv1.Message) bool {
	if c.prep != nil && r < len(c.prep.bare) {
		return c.prep.bare[r]
	}
	return BareQuestion(m)
}

// memoryCounts returns the token count of each memory candidate's whole
// text (-1: not prepared), nil when none is prepared for tok.
func (c *Candidates) memoryCounts(tok Tokenizer) []int64 {
	if c.prep == nil || len(c.prep.memory) == 0 || !sameTokenizer(c.prep.tok, tok) {
		return nil
	}
	return c.prep.memCounts
}

// memoryFirsts returns memoryFirsts of the memory candidates: as prepared,
// or computed in buf.
func (c *Candidates) memoryFirsts(buf *[]int32) []int32 {
	if c.prep != nil && len(c.prep.memFirst) == min(len(c.Memory), MaxMemoryCandidates) {
		return c.prep.memFirst
	}
	*buf = memoryFirsts(c.Memory, *buf)
	return *buf
}

// sameTokenizer reports whether a and b are the same tokenizer (an
// implementation that cannot be compared is never the same).
func sameTokenizer(a, b Tokenizer) bool {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// PrepareMemo keeps prepared candidates between appends (a message
// recalled at one user message is often recalled at the next), keyed by
// their source and checked against it, in two generations of at most
// prepareMemoBytes of text each. Its zero value is ready; it is safe for
// concurrent use.
type PrepareMemo struct {
	mu        sync.Mutex
	tok       Tokenizer
	cur, prev map[prepKey]prepEntry
	curBytes  int
}

const prepareMemoBytes = 8 << 20

// prepKey names a candidate's source: a message of a session (seq) or an
// entry version of a scope (key).
type prepKey struct {
	form       itemForm
	session    string
	seq        uint64
	scope, key string
	version    uint64
}

// prepEntry is a prepared item and the source it was prepared from (what
// its text depends on), to check a hit against.
type prepEntry struct {
	item preparedItem
	msg  *memoryv1.Message
	text string // a memory entry's value
	// keySum is KeySum of a memory entry's key (of prepKey.key).
	keySum []byte
}

// use starts a preparation with tok: the memo holds one tokenizer's
// counts.
func (w *PrepareMemo) use(tok Tokenizer) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !sameTokenizer(w.tok, tok) {
		w.tok, w.cur, w.prev, w.curBytes = tok, nil, nil, 0
	}
}

// message returns message m prepared in form (sid: its session), from the
// memo or counted (outside the lock: appends of other sessions prepare
// meanwhile).
func (w *PrepareMemo) message(tok Tokenizer, form itemForm, sid string, m *memoryv1.Message) preparedItem {
	if w == nil {
		return prepareMessage(tok, form, m)
	}
	k := prepKey{form: form, session: sid, seq: m.GetSeq()}
	if e, ok := w.lookup(k, tok); ok && sameSource(e.msg, m) {
		return e.item
	}
	it := prepareMessage(tok, form, m)
	w.store(k, prepEntry{item: it, msg: m}, len(m.GetContent()), tok)
	return it
}

// entry returns memory candidate m prepared, and its ItemKeySum, from the
// memo or counted (a digest m carries is used as it is).
func (w *PrepareMemo) entry(tok Tokenizer, m *memoryv1.MemoryItem) (preparedItem, []byte) {
	count := func() preparedItem {
		return preparedItem{form: formMemory, ok: true, tokens: textTokens(tok, memoryText(m))}
	}
	carried := m.GetKeySha256()
	if w == nil {
		return count(), ItemKeySum(m)
	}
	k := prepKey{form: formMemory, scope: m.GetScope(), key: m.GetKey(), version: m.GetVersion()}
	if e, ok := w.lookup(k, tok); ok && e.text == m.GetText() {
		if len(carried) > 0 {
			return e.item, carried
		}
		return e.item, e.keySum
	}
	it, sum := count(), KeySum(m.GetKey())
	w.store(k, prepEntry{item: it, text: m.GetText(), keySum: sum}, len(m.GetText()), tok)
	if len(carried) > 0 {
		sum = carried
	}
	return it, sum
}

// lookup returns the entry of k counted with tok.
func (w *PrepareMemo) lookup(k prepKey, tok Tokenizer) (prepEntry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !sameTokenizer(w.tok, tok) {
		return prepEntry{}, false
	}
	if e, ok := w.cur[k]; ok {
		return e, true
	}
	e, ok := w.prev[k]
	if ok {
		w.put(k, e, len(e.msg.GetContent())+len(e.text))
	}
	return e, ok
}

// store keeps e for k, counted with tok (dropped when the memo moved to
// another tokenizer meanwhile).
func (w *PrepareMemo) store(k prepKey, e prepEntry, size int, tok Tokenizer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sameTokenizer(w.tok, tok) {
		w.put(k, e, size)
	}
}

// put keeps e for k (w.mu held).
func (w *PrepareMemo) put(k prepKey, e prepEntry, size int) {
	if w.cur == nil || w.curBytes+size > prepareMemoBytes {
		w.prev, w.cur, w.curBytes = w.cur, make(map[prepKey]prepEntry, len(w.cur)), 0
	}
	w.cur[k] = e
	w.curBytes += size
}

// sameSource reports whether a and b render the same (recalledText and
// EarlierSessionText read these fields only).
func sameSource(a, b *memoryv1.Message) bool {
	if a.GetId() != b.GetId() || a.GetRole() != b.GetRole() || a.GetTurn() != b.GetTurn() || SaidAt(a) != SaidAt(b) ||
		a.GetName() != b.GetName() || a.GetContent() != b.GetContent() || len(a.GetToolCalls()) != len(b.GetToolCalls()) {
		return false
	}
	for i, c := range a.GetToolCalls() {
		d := b.GetToolCalls()[i]
		if c.GetName() != d.GetName() || c.GetArguments() != d.GetArguments() {
			return false
		}
	}
	return true
}
