package segmented

import (
	"slices"
	"sort"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// A message said at a given time (said_unix_nano) that starts its day is
// stored Dated (decide_append.go): the context prints its day before it.
// The context shows other messages out of that order too: the first L1
// message after compression took the head of L1, the message after an
// in-place summary, the first the plan shows after entries it hides, the
// first after the recalled or promoted layer. Each of those shows its day
// as well, unless the text right before it shows the day already (a
// message of its day, a summary whose header ends with its day): remark
// finds them after every event, from the recorded state alone (so replay
// marks the same ones), and counts DayMarkTokens for each in the shown
// L1 tokens. A session without said times has none. Limit: an in-place
// summary in the middle of the shown L1 entries (compression takes the
// oldest, so rarely) is not looked behind.

// DayMarkTokens is what a day mark the message does not store counts: at
// least what DayMark adds to a message's cl100k_base tokens (at most 9,
// tested over dates and content starts). It is a constant so that the
// state, which has no tokenizer, counts it.
const DayMarkTokens = 9

// remark finds the L1 messages the context shows with a day mark they do
// not store (State.marked, totals.marks).
func (s *State) remark() {
	s.marked, s.tok.marks = s.marksFor(s.snap.GetAssembled())
}

// marksMemo is what decideSections found for the plan it chose: applying
// that plan's ContextAssembled right after takes it instead of walking
// the shown entries again.
type marksMemo struct {
	plan   *memoryv1.Assembled
	marked []uint64
	tokens uint64
}

// remarkAfter updates the marks after ev was applied, knowing what ev
// can change: messages appended right after a shown L1 message are each
// right after the message their dated flag was decided against and
// change no other entry's neighbour (the marks stay); the plan
// decideSections just chose brings its marks; anything else is looked at
// again. afterShownMessage: the last L1 entry before ev was a message the
// context showed.
func (s *State) remarkAfter(ev proto.Message, afterShownMessage bool) {
	memo := s.marksMemo
	s.marksMemo = marksMemo{}
	switch e := ev.(type) {
	case *memoryv1.MessagesAppended:
		if afterShownMessage {
			return
		}
	case *memoryv1.ContextAssembled:
		if memo.plan != nil && e.GetSections() == memo.plan {
			s.marked, s.tok.marks = memo.marked, memo.tokens
			return
		}
	}
	s.remark()
}

// endsWithShownMessage reports whether the last L1 entry is a message the
// context shows.
func (s *State) endsWithShownMessage() bool {
	l1 := s.snap.GetL1()
	if len(l1) == 0 {
		return false
	}
	e := l1[len(l1)-1]
	return e.GetMessage() != nil && showsL1(s.snap.GetAssembled(), e)
}

// The rules SessionCreated.day_marks names. A session keeps the rule it
// was created under, so a log written before the marks replays to the
// contexts it served.
const (
	// DayMarksAtDayStart: only a day's first message shows its day, as
	// it was stored (sessions created before the field).
	DayMarksAtDayStart uint32 = 0
	// DayMarksAfterOtherDays: also every message the context shows after
	// text of another day (remark).
	DayMarksAfterOtherDays uint32 = 1
)

// marksFor returns the seqs of the L1 messages the context would show
// with a day mark they do not store under the plan a, and their tokens.
func (s *State) marksFor(a *memoryv1.Assembled) (marked []uint64, tokens uint64) {
	if s.snap.GetDayMarks() < DayMarksAfterOtherDays {
		return nil, 0
	}
	l1 := s.snap.GetL1()
	if len(l1) == 0 {
		return nil, 0
	}
	k := &marker{s: s, a: a, l1: l1, prev: -1}
	if !a.GetPlanned() {
		k.look(0)
		return k.marked, k.tokens
	}
	for _, seq := range a.GetL1Seqs() {
		// Chosen entries are often consecutive: the next one first.
		if j := k.prev + 1; j > 0 && j < len(l1) {
			if m := l1[j].GetMessage(); m != nil && m.GetSeq() == seq && l1[k.prev].GetMessage() != nil {
				// A message right after the message before it: what
				// look(j) finds at once, without the call (most of a
				// long plan's entries).
				k.prev = j
				continue
			}
			if first, _ := entryRange(l1[j]); first == seq {
				k.look(j)
				continue
			}
		}
		// The seqs ascend: the entry is after the one looked at last.
		from := max(k.prev+1, 0)
		if i, ok := l1At(l1[from:], seq); ok {
			k.look(from + i)
		}
	}
	k.look(sort.Search(len(l1), func(i int) bool {
		first, _ := entryRange(l1[i])
		return first >= a.GetTailSeq()
	}))
	return k.marked, k.tokens
}

// marker walks the L1 entries plan a shows, in order, and collects the
// messages shown with a day mark they do not store (marksFor).
type marker struct {
	s      *State
	a      *memoryv1.Assembled
	l1     []*memoryv1.L1Entry
	prev   int // the last L1 entry shown before the one looked at
	marked []uint64
	tokens uint64
}

// look looks at the shown entry i and, after a shown summary, at the
// entry after it.
func (k *marker) look(i int) {
	if i <= k.prev {
		return // looked at already
	}
	l1 := k.l1
	for ; i < len(l1); i++ {
		before := k.prev
		m := l1[i].GetMessage()
		if i > 0 && before == i-1 {
			if m != nil && l1[i-1].GetMessage() != nil {
				// Right after the message it was appended after,
				// which its dated flag was decided against.
				k.prev = i
				return
			}
			if !showsL1(k.a, l1[i]) {
				return // after a shown summary, an entry the plan hides
			}
		}
		k.prev = i
		if m == nil {
			continue
		}
		if n := len(k.marked); !m.GetDated() && m.GetSaidUnixNano() != 0 && !k.s.dayBefore(k.a, before, m.GetSaidUnixNano()) &&
			(n == 0 || k.marked[n-1] < m.GetSeq()) {
			k.marked = append(k.marked, m.GetSeq())
			k.tokens += DayMarkTokens
		}
		return
	}
}

// dayBefore reports whether the text the context shows under plan a right
// before an L1 message (prev: the L1 entry shown last before it, -1 none)
// shows the day of said: a message said that day (its day is shown: its
// mark, or the text before it), or a summary whose last printed day it
// is. With no L1 entry before it, that text is the end of the promoted
// layer, of the recalled section or of L2, whichever the context shows.
func (s *State) dayBefore(a *memoryv1.Assembled, prev int, said int64) bool {
	p := s.snap
	if prev >= 0 {
		e := p.L1[prev]
		if m := e.GetMessage(); m != nil {
			return sameDay(m.GetSaidUnixNano(), said) && !printsOtherDay(m.GetContent(), said)
		}
		return showsDay(e.GetSummary().GetText(), said)
	}
	if n := len(p.GetPromoted()); n > 0 {
		m := p.Promoted[n-1]
		return m.GetDated() && sameDay(m.GetSaidUnixNano(), said)
	}
	if len(a.GetRecalled()) > 0 {
		return false
	}
	for j := len(p.GetL2()) - 1; j >= 0; j-- {
		if sum := p.L2[j]; showsL2(a, sum) {
			return showsDay(sum.GetText(), said)
		}
	}
	return false
}

// lastText is the content of the session's latest message ("": none, or
// not verbatim in L1).
func (s *State) lastText() string {
	l1 := s.snap.GetL1()
	if len(l1) == 0 {
		return ""
	}
	return l1[len(l1)-1].GetMessage().GetContent()
}

// printsOtherDay reports whether the last day text prints (YYYY-MM-DD)
// is not the day of said: a message after it shows its own then.
func printsOtherDay(text string, said int64) bool {
	d := lastDay(text)
	return d != "" && !isDayOf(d, said)
}

// lastDay is the last day text prints, written YYYY-MM-DD ("": none).
func lastDay(text string) string {
	const n = len("2006-01-02")
	// The dashes from the last: a day's first is its 5th byte.
	for end := len(text); ; {
		j := strings.LastIndexByte(text[:end], '-')
		if j < 0 {
			return ""
		}
		if i := j - 4; i >= 0 && i+n <= len(text) && isDay(text[i:i+n]) {
			return text[i : i+n]
		}
		end = j
	}
}

// showsDay reports whether the last day a summary's text prints
// (YYYY-MM-DD: its header's " (said … to 2023-05-08)", or a condensed
// summary's last line with one) is the day of said.
func showsDay(text string, said int64) bool {
	return isDayOf(lastDay(text), said)
}

// isDayOf reports whether d is the day of said written YYYY-MM-DD (as
// Format(time.DateOnly) writes it, in a buffer on the stack: the marks
// are looked for at every plan).
func isDayOf(d string, said int64) bool {
	var buf [16]byte
	return string(time.Unix(0, said).UTC().AppendFormat(buf[:0], time.DateOnly)) == d
}

// isDay reports whether d is written YYYY-MM-DD.
func isDay(d string) bool {
	for i := range len(d) {
		switch c := d[i]; {
		case i == 4 || i == 7:
			if c != '-' {
				return false
			}
		case c < '0' || c > '9':
			return false
		}
	}
	return true
}

// datePromoted marks a promoted copy with its day: the promoted layer
// shows old messages out of their place, after text of other days.
func datePromoted(m *memoryv1.Message, tok Tokenizer) {
	if m.GetDated() || m.GetSaidUnixNano() == 0 {
		return
	}
	m.Dated = true
	m.Tokens = messageTokens(tok, DayMark(m.SaidUnixNano)+m.Content, m.ToolCalls)
}

// dayMarked reports whether the context shows L1 message m with a day
// mark it does not store.
func (s *State) dayMarked(m *memoryv1.Message) bool {
	_, ok := slices.BinarySearch(s.marked, m.GetSeq())
	return ok
}
