package inspector

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// planView is how the session chose its recalled and memory sections for
// its latest user message, as the ContextAssembled event recorded it: the
// room, the caps, and the best candidates left out, with their score and
// why. Nothing here is computed again: replay never plans.
type planView struct {
	ForMessage string
	ForSeq     uint64
	// Recorded is false for sections chosen before the why was recorded.
	Recorded                             bool
	Room, RecalledCap, MemoryCap         uint64
	RecalledCandidates, MemoryCandidates uint32
	LeftOut                              []leftOutView
	// Gone are items the plan chose that the context no longer shows: the
	// source was erased (or archived away) since.
	Gone []string
}

type leftOutView struct {
	Section, Name, Reason string
	Score                 string
	Rank, Tokens          uint32
}

// plan is the view of src's sections for cx (nil without sections).
func (s sources) plan(cx *memoryv1.ContextReply) *planView {
	sec := s.sec
	if sec == nil || (len(sec.GetRecalled()) == 0 && len(sec.GetMemory()) == 0 && !sec.GetPlanned()) {
		return nil
	}
	p := &planView{ForMessage: sec.GetForMessageId(), ForSeq: sec.GetForSeq()}
	if w := sec.GetWhy(); w != nil {
		p.Recorded = true
		p.Room, p.RecalledCap, p.MemoryCap = w.GetRoom(), w.GetRecalledCap(), w.GetMemoryCap()
		p.RecalledCandidates, p.MemoryCandidates = w.GetRecalledCandidates(), w.GetMemoryCandidates()
		for _, lo := range w.GetLeftOut() {
			p.LeftOut = append(p.LeftOut, leftOutView{Section: lo.GetSection(), Name: leftOutName(lo), Reason: reasonText(lo.GetReason()),
				Score: score(lo.GetScore()), Rank: lo.GetRank(), Tokens: lo.GetTokens()})
		}
	}
	shown := map[string]bool{}
	for _, m := range cx.GetMessages() {
		shown[m.GetId()] = true
	}
	for _, r := range sec.GetRecalled() {
		if id := recalledID(r); !shown[id] {
			p.Gone = append(p.Gone, strings.TrimPrefix(id, "recalled:")+": erased since (its source is gone)")
		}
	}
	for _, m := range sec.GetMemory() {
		if !shown["memory:"+m.GetScope()+"/"+m.GetKey()] {
			p.Gone = append(p.Gone, fmt.Sprintf("%s · key %s v%d: erased since (the entry is gone)", m.GetScope(), m.GetKey(), m.GetVersion()))
		}
	}
	return p
}

// why says why context message m is in the context.
func (s sources) why(m *memoryv1.ContextMessage) string {
	sec, w := s.sec, s.sec.GetWhy()
	rank := func(scores []float32, ranks []uint32, k int, of uint32, section string) string {
		if w == nil || k >= len(scores) || k >= len(ranks) {
			return "chosen for message " + sec.GetForMessageId() + " (recorded before scores were)"
		}
		return fmt.Sprintf("score %s · rank %d of %d %s candidates", score(scores[k]), ranks[k], of, section)
	}
	switch m.GetLayer() {
	case segmented.LayerROM:
		return "always sent: the system prompt and patterns"
	case segmented.LayerKernel:
		return "always sent: the Kernel"
	case segmented.LayerPromoted:
		return "promoted back from swap (kept until cleared)"
	case segmented.LayerRecalled:
		if k, ok := s.recallAt[m.GetId()]; ok {
			return rank(w.GetRecalledScores(), w.GetRecalledRanks(), k, w.GetRecalledCandidates(), "recalled")
		}
	case segmented.LayerMemory:
		if _, _, k, ok := s.memoryItemAt(m.GetId()); ok {
			return rank(w.GetMemoryScores(), w.GetMemoryRanks(), k, w.GetMemoryCandidates(), "memory")
		}
	case segmented.LayerL2:
		if sec.GetPlanned() {
			return "an L2 summary the allocation chose"
		}
		return "in L2"
	case segmented.LayerL1:
		if !sec.GetPlanned() {
			return "in L1"
		}
		first := uint64(0)
		if msg, ok := s.msgs[m.GetId()]; ok {
			first = msg.GetSeq()
		} else if sum, ok := s.sums[m.GetId()]; ok {
			first = sum.first
		}
		if first >= sec.GetTailSeq() {
			return "the verbatim tail: always shown"
		}
		if first > 0 {
			return "an older L1 entry the allocation chose"
		}
	}
	return ""
}

func score(f float32) string { return fmt.Sprintf("%.2f", f) }

func reasonText(r memoryv1.LeftOutReason) string {
	switch r {
	case memoryv1.LeftOutReason_LEFT_OUT_REASON_NO_ROOM:
		return "no room"
	case memoryv1.LeftOutReason_LEFT_OUT_REASON_BELOW_THRESHOLD:
		return "below the threshold (score 0)"
	}
	return "unknown"
}

// leftOutName names a left-out candidate by its reference: the message
// and session, the archived summary, or the scope and the start of its
// key's digest (the key itself is never recorded).
func leftOutName(lo *memoryv1.LeftOut) string {
	switch {
	case lo.GetSection() == segmented.LayerMemory:
		return fmt.Sprintf("%s · key #%.12s v%d", lo.GetScope(), hex.EncodeToString(lo.GetKeySha256()), lo.GetVersion())
	case lo.GetSummaryId() != "":
		return fmt.Sprintf("archived summary %s · to seq %d", lo.GetSummaryId(), lo.GetSeq())
	case lo.GetSessionId() != "":
		return fmt.Sprintf("message %s · seq %d of earlier session %s", lo.GetMessageId(), lo.GetSeq(), lo.GetSessionId())
	}
	return fmt.Sprintf("message %s · seq %d (swap)", lo.GetMessageId(), lo.GetSeq())
}
