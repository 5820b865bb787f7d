package segmented

import (
	"strconv"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Archived L2 summaries are what compression moved out of the context for
// good: the oldest summaries, archived to the swap when L2 is over its cap.
// A later question about that stretch of the conversation finds them by
// the session's search (the projection indexes them) and they compete for
// the recalled section like a hit: one summary often carries what tens of
// archived turns said, in fewer tokens.

// SummariesSearched is how many archived summaries the node asks the
// session's search for (besides its RecallSearched messages): a session
// archives a few summaries per thousand turns, so a handful of matches is
// what there is.
const SummariesSearched = 10

// OfferHits sets c's recall candidates from the hits of the searches of
// session id (its own swap, with its archived summaries, and its earlier
// sessions), best first: the messages as OfferRecallFrom offers them (at
// most earlier of other sessions), the summaries, of the session only, in
// Summaries. The node calls it once per user message.
func (c *Candidates) OfferHits(id string, hits []*memoryv1.SearchHit, earlier int) {
	msgs, scores, sessions := make([]*memoryv1.Message, 0, len(hits)), make([]float64, 0, len(hits)), make([]string, 0, len(hits))
	for _, h := range hits {
		sid := h.GetSessionId()
		if sum := h.GetSummary(); sum != nil {
			if sid == id && len(c.Summaries) < SummariesSearched {
				c.Summaries, c.SummaryScores = append(c.Summaries, sum), append(c.SummaryScores, h.GetScore())
			}
			continue
		}
		if sid == id {
			sid = ""
		}
		msgs, scores, sessions = append(msgs, h.GetMessage()), append(scores, h.GetScore()), append(sessions, sid)
	}
	c.Recall, c.RecallScores, c.RecallSessions = OfferRecallFrom(msgs, scores, sessions, earlier)
}

// ArchivedSummaryText is an archived summary as the recalled section shows
// it: which messages it covers, then its text. The log records a reference
// (RecalledItem.summary_id, text_bytes, trimmed), not the text: Hydrate
// reads the summary from the swap (ArchivedSummaryItemText), so a context
// does not copy tens of archived turns' worth of text into the log at
// every user message, and a summary gone from the swap leaves no trace.
func ArchivedSummaryText(sum *memoryv1.Summary) string {
	var b strings.Builder
	b.Grow(len("Archived summary of messages  to : ") + 40 + len(sum.GetText()))
	b.WriteString("Archived summary of messages ")
	b.WriteString(strconv.FormatUint(sum.GetFirstSeq(), 10))
	b.WriteString(" to ")
	b.WriteString(strconv.FormatUint(sum.GetLastSeq(), 10))
	b.WriteString(": ")
	b.WriteString(sum.GetText())
	return b.String()
}

// archivedWeight is the value of the best archived summary (a hit's is
// hitWeight). Valued as a hit, summaries displaced the turns that answer
// (question mode on LoCoMo, 2k: evidence 0.64 → 0.59); at 0.15 they only
// fill what the hits leave (evidence and answers within ±0.02).
const archivedWeight = 0.15

// addArchived makes a recalled part of each archived summary c offers,
// valued like a hit of the same rank and relative score (the summaries'
// scores are relative to the best of them: they rank in a corpus of their
// own). A summary still in L2 (an archive not yet projected as such) is
// left to its L2 part.
func (p *planner) addArchived(c *Candidates) {
	if !p.s.Assembly().GetArchivedSummaries() || len(c.Summaries) == 0 {
		return
	}
	var best float64
	if len(c.SummaryScores) == len(c.Summaries) {
		for _, sc := range c.SummaryScores {
			best = max(best, sc)
		}
	}
	inL2 := map[string]bool{}
	for _, sum := range p.s.snap.GetL2() {
		inL2[sum.GetId()] = true
	}
	seen := map[string]bool{}
	for r, sum := range c.Summaries[:min(len(c.Summaries), SummariesSearched)] {
		if sum == nil || inL2[sum.GetId()] || seen[sum.GetId()] {
			continue
		}
		seen[sum.GetId()] = true
		v := archivedWeight / (1 + float64(r)/hitRankScale)
		if best > 0 {
			v = archivedWeight * max(0, c.SummaryScores[r]) / best / (1 + float64(r)/hitRankScale)
		}
		full := ArchivedSummaryText(sum)
		text, tokens, ok := fitItem(p.tok, full, maxRecalledItemTokens)
		if !ok {
			continue
		}
		it := preparedItem{form: formRecalled, ok: true, tokens: tokens, bytes: uint32(len(text))}
		if text != full {
			it.bytes, it.trimmed = uint32(len(strings.TrimSuffix(text, "…"))), true
		}
		p.recs = append(p.recs, recalledRef{sum: sum, it: it})
		p.add(Part{Kind: PartRecalled, Tokens: uint64(tokens), Value: v}, partRef{l2: -1, rec: int32(len(p.recs))})
	}
}

// ArchivedSummaryItemText is the text recalled item ref (an archived
// summary) shows of sum: the first text_bytes bytes of
// ArchivedSummaryText, then "…" when it was trimmed.
func ArchivedSummaryItemText(ref *memoryv1.RecalledItem, sum *memoryv1.Summary) string {
	return cutText(ArchivedSummaryText(sum), ref.GetTextBytes(), ref.GetTrimmed())
}
