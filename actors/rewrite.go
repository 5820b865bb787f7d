package actors

import (
	"context"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// rewriteJob is one summary to rewrite with the Rewriter, and its source text.
type rewriteJob struct {
	summaryID string
	text      string
	maxTokens int
}

// rewriteJobs lists the summaries evs create, with the text they cover, read
// from the state before evs are applied. Only called when a Rewriter is set.
func rewriteJobs(before *segmented.State, evs []proto.Message) []rewriteJob {
	var sums []*memoryv1.Summary
	for _, ev := range evs {
		switch e := ev.(type) {
		case *memoryv1.L1Summarized:
			sums = append(sums, e.GetSummary())
		case *memoryv1.L1Evicted:
			// Summaries moved from L1 to L2 as they are were rewritten
			// when they were made; only a new summary is.
			if e.GetSummary() != nil {
				sums = append(sums, e.GetSummary())
			}
		}
	}
	if len(sums) == 0 {
		return nil
	}
	snap := before.Snapshot()
	jobs := make([]rewriteJob, 0, len(sums))
	for _, s := range sums {
		var b strings.Builder
		for _, e := range snap.GetL1() {
			seq, text := entrySpan(e)
			if seq >= s.GetFirstSeq() && seq <= s.GetLastSeq() {
				b.WriteString(text)
				b.WriteByte('\n')
			}
		}
		if b.Len() == 0 { // covers entries created in this same batch
			b.WriteString(s.GetText())
		}
		jobs = append(jobs, rewriteJob{summaryID: s.GetId(), text: b.String(), maxTokens: int(s.GetTokens())})
	}
	return jobs
}

func entrySpan(e *memoryv1.L1Entry) (uint64, string) {
	if m := e.GetMessage(); m != nil {
		return m.GetSeq(), m.GetRole().String() + ": " + m.GetContent()
	}
	s := e.GetSummary()
	return s.GetLastSeq(), "summary: " + s.GetText()
}

// startRewrites runs each job beside the actor; results come back as
// rewritten messages. Stopped by the directory's background context.
func (a *sessionActor) startRewrites(self *actor.PID, jobs []rewriteJob) {
	d := a.dir
	for _, j := range jobs {
		d.goBackground(func() { // closing: the extractive summary stays
			ctx, cancel := context.WithTimeout(d.bg, d.cfg.RewriteTimeout)
			defer cancel()
			text, err := d.deps.Rewriter.Rewrite(ctx, j.text, j.maxTokens)
			if err != nil {
				d.deps.Logger.Warn("summary rewrite failed; keeping the extractive summary", "session", a.id, "summary", j.summaryID, "err", err)
				return
			}
			d.send(self, &rewritten{summaryID: j.summaryID, text: text})
		})
	}
}

// applyRewrite decides the rewrite against the current state: it is refused
// if the summary is gone or the new text is not smaller.
func (a *sessionActor) applyRewrite(m *rewritten) {
	if a.ensureRecovered() != nil {
		return
	}
	_, err := a.mutate("", func() ([]proto.Message, error) {
		return a.st().DecideReplaceSummary(m.summaryID, m.text, "llm", a.env())
	})
	if err != nil {
		a.dir.deps.Logger.Info("summary rewrite not applied", "session", a.id, "summary", m.summaryID, "err", err)
	}
}
