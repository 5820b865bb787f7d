package membench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/dialoggen"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// QuestionConfig is the question mode: LoCoMo-like
// conversations (internal/dialoggen), each ingested whole, then every
// question appended as the user asks it.
type QuestionConfig struct {
	Dialog dialoggen.Config
	// Conversations are generated with seeds Dialog.Seed, Dialog.Seed+1, …
	Conversations int
	// Budgets are context budgets in tokens (max_context − reserved_output).
	Budgets []int
	// RecallK are the k of the search table, ascending (at most 20).
	RecallK []int
	// RAGHits is how many FTS5 hits a RAG baseline fetches to fill its
	// share with.
	RAGHits int
	// Dir holds the projections' bbolt files; "" = a temporary directory.
	Dir string
	// ArchivedSummaries: the agentmem sessions are offered their archived
	// L2 summaries (AssemblyConfig.archived_summaries; off by default), for
	// the comparison with the default.
	ArchivedSummaries bool
}

// DefaultQuestionConfig is the question mode of `make bench-memory`.
func DefaultQuestionConfig() QuestionConfig {
	return QuestionConfig{Dialog: dialoggen.DefaultConfig(), Conversations: 3, Budgets: []int{2048, 4096, 16384}, RecallK: []int{5, 10}, RAGHits: 50}
}

// Validate checks the QuestionConfig.
func (c QuestionConfig) Validate() error {
	if err := c.Dialog.Validate(); err != nil {
		return err
	}
	switch {
	case c.Conversations < 1:
		return fmt.Errorf("%w: Conversations must be >= 1", ErrConfig)
	case len(c.Budgets) == 0 || !slices.IsSorted(c.Budgets) || c.Budgets[0] < segmented.MinBudget:
		return fmt.Errorf("%w: Budgets must be ascending and >= %d", ErrConfig, segmented.MinBudget)
	case len(c.RecallK) == 0 || !slices.IsSorted(c.RecallK) || c.RecallK[0] < 1 || c.RecallK[len(c.RecallK)-1] > 20:
		return fmt.Errorf("%w: RecallK must be ascending, in 1..20", ErrConfig)
	case c.RAGHits < 1:
		return fmt.Errorf("%w: RAGHits must be >= 1", ErrConfig)
	}
	return nil
}

// The rows of the question mode, per budget.
const (
	rowAgentmem = "agentmem (defaults)"
	rowWindow   = "sliding window"
	rowRAG80    = "window + FTS5 RAG 80/20"
	rowRAG50    = "window + FTS5 RAG 50/50"
	rowFull     = "full transcript"
)

var questionRows = []string{rowAgentmem, rowWindow, rowRAG80, rowRAG50, rowFull}

// QShare is one memory's score on a set of questions: every evidence turn
// verbatim in the context, any of them, and the answer (every Needs group).
type QShare struct{ Evidence, AnyEvidence, Answer Share }

func (q *QShare) add(all, any, answer bool) {
	q.Evidence.add(all)
	q.AnyEvidence.add(any)
	q.Answer.add(answer)
}

// QuestionRow is one memory at one budget.
type QuestionRow struct {
	Budget int
	Memory string
	All    QShare
	ByCat  map[dialoggen.Category]*QShare
	// Stale: of the correction questions, the context holds a superseded
	// value and not the current one.
	Stale Share
	// Dated: of the temporal questions whose evidence turns are all in the
	// context, those whose every evidence turn's day a reader learns from
	// the context (dateShown), as the cross-session table counts it.
	Dated Share
	// MeanUsed: tokens of the context, mean over the questions.
	MeanUsed float64
	used     int
}

// Where is where agentmem's evidence turns went, one count per evidence
// turn of every question.
type Where struct {
	Budget                                     int
	L1, Recalled, Summary, NotChosen, NotFound int
}

// Total is every evidence turn counted.
func (w Where) Total() int { return w.L1 + w.Recalled + w.Summary + w.NotChosen + w.NotFound }

// QuestionSearchRow is one engine's recall of the evidence: a hit is any
// evidence turn of the question within the first k.
type QuestionSearchRow struct {
	Engine string
	K      []int
	All    []Share
	ByCat  map[dialoggen.Category][]Share
	MRR    float64
	rr     float64
}

// QuestionReport is the result of RunQuestions; every figure is a function
// of the QuestionConfig.
type QuestionReport struct {
	Config QuestionConfig
	// Source names the conversations (the table's title); Categories are
	// the categories of their questions, in report order.
	Source     string
	Categories []dialoggen.Category
	// AnswerNote says what the answer column scores when it is not the
	// generator's answer strings.
	AnswerNote                      string
	Conversations, Messages, Tokens int
	Sittings, Questions, Continuity int
	ByCat                           map[dialoggen.Category]int
	Rows                            []*QuestionRow // budget-major, questionRows order
	Where                           []Where
	Cont                            []*QuestionRow // continuity: agentmem and the window per budget
	Search                          []*QuestionSearchRow
}

// RunQuestions generates the conversations and measures the question mode.
func RunQuestions(ctx context.Context, cfg QuestionConfig) (*QuestionReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var convs []*dialoggen.Conversation
	for k := range cfg.Conversations {
		dc := cfg.Dialog
		dc.Seed += uint64(k)
		conv, err := dialoggen.Generate(dc)
		if err != nil {
			return nil, err
		}
		convs = append(convs, conv)
	}
	pools := ""
	if cfg.Dialog.Pools != "" {
		pools = fmt.Sprintf(", %s pools", cfg.Dialog.Pools)
	}
	source := fmt.Sprintf("LoCoMo-like conversations (dialoggen seeds %d–%d%s)", cfg.Dialog.Seed, cfg.Dialog.Seed+uint64(cfg.Conversations)-1, pools)
	return runQuestions(ctx, cfg, convs, source, dialoggen.EndCategories, nil)
}

// runQuestions measures the question mode on convs; answered (nil: the
// Needs) says whether a context holds a question's answer.
func runQuestions(ctx context.Context, cfg QuestionConfig, convs []*dialoggen.Conversation, source string, cats []dialoggen.Category, answered func(text string, qq *dialoggen.Question) bool) (*QuestionReport, error) {
	tok, err := segmented.NewTokenizer()
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := workDir(cfg.Dir, "membench-q-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &QuestionReport{Config: cfg, Source: source, Categories: cats, ByCat: map[dialoggen.Category]int{}}
	for _, b := range cfg.Budgets {
		for _, name := range questionRows {
			rep.Rows = append(rep.Rows, newQuestionRow(b, name))
		}
		rep.Where = append(rep.Where, Where{Budget: b})
		rep.Cont = append(rep.Cont, newQuestionRow(b, rowAgentmem), newQuestionRow(b, rowWindow))
	}
	for k, conv := range convs {
		sub := filepath.Join(dir, fmt.Sprintf("conv%d", k))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		q := &qrun{cfg: cfg, rep: rep, conv: conv, tok: tok, answered: answered}
		if err := q.run(ctx, sub); err != nil {
			return nil, err
		}
	}
	for _, rows := range [][]*QuestionRow{rep.Rows, rep.Cont} {
		for _, r := range rows {
			if r.All.Answer.N > 0 {
				r.MeanUsed = float64(r.used) / float64(r.All.Answer.N)
			}
		}
	}
	for _, s := range rep.Search {
		if s.All[0].N > 0 {
			s.MRR = s.rr / float64(s.All[0].N)
		}
	}
	return rep, nil
}

func newQuestionRow(budget int, name string) *QuestionRow {
	return &QuestionRow{Budget: budget, Memory: name, ByCat: map[dialoggen.Category]*QShare{}}
}

func (r *QuestionRow) cat(c dialoggen.Category) *QShare {
	if r.ByCat[c] == nil {
		r.ByCat[c] = &QShare{}
	}
	return r.ByCat[c]
}

// qrun is one conversation of the question mode.
type qrun struct {
	cfg  QuestionConfig
	rep  *QuestionReport
	conv *dialoggen.Conversation
	tok  segmented.Tokenizer
	// answered says whether a context holds the question's answer (nil:
	// one string of every Needs group).
	answered func(text string, qq *dialoggen.Question) bool

	tr     []convgen.Message // the transcript: the conversation, then the questions asked
	tokens []int
	rom    int
	mems   []*agentmemMemory // per budget
}

// toConvgen is a dialoggen message as the benchmark's drivers take it.
func toConvgen(m *dialoggen.Message) convgen.Message {
	return convgen.Message{Index: m.Index, Sitting: m.Sitting, Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, UnixNano: m.UnixNano}
}

func (q *qrun) push(m convgen.Message) {
	q.tr = append(q.tr, m)
	q.tokens = append(q.tokens, messageTokens(q.tok, &m, before(q.tr, len(q.tr)-1)))
}

func (q *qrun) run(ctx context.Context, dir string) error {
	c := q.conv
	q.rep.Conversations++
	q.rep.Messages += len(c.Messages)
	q.rep.Sittings += len(c.Sittings)
	q.rep.Questions += len(c.Questions)
	q.rep.Continuity += len(c.Continuity)
	for _, qq := range c.Questions {
		q.rep.ByCat[qq.Category]++
	}
	q.rom = textTokens(q.tok, c.SystemPrompt)
	shell := &convgen.Conversation{Config: convgen.Config{StartUnixNano: c.Config.StartUnixNano}, SystemPrompt: c.SystemPrompt}
	ps, err := newProjectionSearcher(dir, shell, q.tok)
	if err != nil {
		return err
	}
	defer func() { _ = ps.Close() }()
	fs, err := newFTS5Searcher()
	if err != nil {
		return err
	}
	defer func() { _ = fs.Close() }()
	for _, b := range q.cfg.Budgets {
		var with *memoryv1.AssemblyConfig // nil: the server's defaults
		if q.cfg.ArchivedSummaries {
			with = &memoryv1.AssemblyConfig{Recall: true, Memory: true, ArchivedSummaries: true} // the defaults, and summaries
		}
		m, err := newAgentmemWith(shell, q.tok, b, "", ps, with)
		if err != nil {
			return err
		}
		m.name = rowAgentmem
		if q.cfg.ArchivedSummaries {
			if err := m.withArchive(filepath.Join(dir, fmt.Sprintf("archive-%d.db", b))); err != nil {
				return err
			}
			defer func() { _ = m.archive.Close() }()
		}
		q.mems = append(q.mems, m)
	}
	if len(q.rep.Search) == 0 {
		for _, name := range []string{ps.Name(), fs.Name()} {
			q.rep.Search = append(q.rep.Search, &QuestionSearchRow{Engine: name, K: q.cfg.RecallK, All: make([]Share, len(q.cfg.RecallK)), ByCat: map[dialoggen.Category][]Share{}})
		}
	}

	// Ingest the conversation; the continuity questions are asked on a
	// copy of the session right after the turns they ask about.
	cont := c.Continuity
	for _, a := range c.Appends {
		if err := ctx.Err(); err != nil {
			return err
		}
		var msgs []convgen.Message
		for i := a.Start; i < a.End; i++ {
			m := toConvgen(&c.Messages[i])
			msgs = append(msgs, m)
			q.push(m)
		}
		for _, m := range q.mems {
			if err := m.Append(msgs); err != nil {
				return err
			}
		}
		if err := ps.Add(msgs); err != nil {
			return err
		}
		if err := fs.Add(msgs); err != nil {
			return err
		}
		for len(cont) > 0 && cont[0].At == a.End {
			if err := q.continuity(&cont[0]); err != nil {
				return err
			}
			cont = cont[1:]
		}
	}
	if len(cont) > 0 {
		return fmt.Errorf("membench: %d continuity questions left after the conversation", len(cont))
	}
	for _, n := range q.tokens {
		q.rep.Tokens += n
	}

	// The questions, appended for good one after the other.
	at := c.Messages[len(c.Messages)-1].UnixNano
	for i := range c.Questions {
		if err := ctx.Err(); err != nil {
			return err
		}
		qq := &c.Questions[i]
		at += int64(time.Minute)
		m := convgen.Message{Index: len(q.tr), Sitting: len(c.Sittings), Role: memoryv1.Role_ROLE_USER, Content: qq.Text, UnixNano: at}
		if err := q.search(qq, ps, fs); err != nil {
			return err
		}
		hits, err := fs.Search(qq.Text, q.cfg.RAGHits)
		if err != nil {
			return err
		}
		q.push(m)
		for bi, am := range q.mems {
			if err := am.Append([]convgen.Message{m}); err != nil {
				return err
			}
			if err := q.scoreAgentmem(bi, am, qq); err != nil {
				return err
			}
		}
		full := q.render(func(int) bool { return true })
		for bi, b := range q.cfg.Budgets {
			rows := q.rep.Rows[bi*len(questionRows):]
			for _, r := range rows[1:len(questionRows)] {
				var ctxt Context
				switch r.Memory {
				case rowWindow:
					ctxt = q.rag(b, 100, nil)
				case rowRAG80:
					ctxt = q.rag(b, 80, hits)
				case rowRAG50:
					ctxt = q.rag(b, 50, hits)
				default:
					ctxt = full
				}
				if r.Memory != rowFull && ctxt.Used > b {
					return fmt.Errorf("membench: %s uses %d tokens of a budget of %d", r.Memory, ctxt.Used, b)
				}
				q.score(r, qq, ctxt)
			}
		}
		if err := ps.Add([]convgen.Message{m}); err != nil {
			return err
		}
		if err := fs.Add([]convgen.Message{m}); err != nil {
			return err
		}
	}
	return nil
}

// score counts one question's context for row r.
func (q *qrun) score(r *QuestionRow, qq *dialoggen.Question, c Context) {
	all, any := true, false
	for _, e := range qq.Evidence {
		in := strings.Contains(c.Text, q.tr[e].Content)
		all, any = all && in, any || in
	}
	if all && qq.Category == dialoggen.Temporal {
		dated := true
		for _, e := range qq.Evidence {
			if t := q.tr[e].UnixNano; t == 0 || !dateShown(c.Text, q.tr[e].Content, t) {
				dated = false
			}
		}
		r.Dated.add(dated)
	}
	answer := hasNeeds(c.Text, qq.Needs)
	if q.answered != nil {
		answer = q.answered(c.Text, qq)
	}
	r.All.add(all, any, answer)
	r.cat(qq.Category).add(all, any, answer)
	if len(qq.Superseded) > 0 {
		r.Stale.add(!answer && containsAny(c.Text, qq.Superseded))
	}
	r.used += c.Used
}

// hasNeeds reports whether text holds one string of every group.
func hasNeeds(text string, needs [][]string) bool {
	for _, g := range needs {
		if !containsAny(text, g) {
			return false
		}
	}
	return true
}

// scoreAgentmem scores the context agentmem holds right after the question
// was appended, and where each evidence turn went.
func (q *qrun) scoreAgentmem(bi int, am *agentmemMemory, qq *dialoggen.Question) error {
	reply := am.hydrate(am.st.Context())
	c, err := am.render(reply)
	if err != nil {
		return err
	}
	if c.Used > am.budget {
		return fmt.Errorf("membench: agentmem uses %d tokens of a budget of %d", c.Used, am.budget)
	}
	q.score(q.rep.Rows[bi*len(questionRows)], qq, c)
	w := &q.rep.Where[bi]
	for _, e := range qq.Evidence {
		switch where(am, reply, q.tr[e].Content, e, qq.Needs) {
		case "l1":
			w.L1++
		case "recalled":
			w.Recalled++
		case "summary":
			w.Summary++
		case "not chosen":
			w.NotChosen++
		default:
			w.NotFound++
		}
	}
	return nil
}

// where classifies evidence turn e in agentmem's context: verbatim in L1
// (or promoted), in the recalled section, only in a summary (an L1 or L2
// summary holds one of the turn's answer strings), among the candidates
// of the latest search but not chosen, or never among them.
func where(am *agentmemMemory, reply *memoryv1.ContextReply, content string, e int, needs [][]string) string {
	sm, ok := am.byIndex[e]
	if ok {
		for _, cm := range reply.GetMessages() {
			switch {
			case (cm.GetLayer() == segmented.LayerL1 || cm.GetLayer() == segmented.LayerPromoted) && cm.GetId() == sm.GetId():
				return "l1"
			case cm.GetLayer() == segmented.LayerRecalled && cm.GetId() == "recalled:"+sm.GetId():
				return "recalled"
			}
		}
	}
	var keys []string
	for _, g := range needs {
		for _, s := range g {
			if strings.Contains(content, s) {
				keys = append(keys, s)
			}
		}
	}
	for _, cm := range reply.GetMessages() {
		summary := cm.GetLayer() == segmented.LayerL2 || (cm.GetLayer() == segmented.LayerL1 && cm.GetRole() == memoryv1.Role_ROLE_SYSTEM) ||
			(cm.GetLayer() == segmented.LayerRecalled && strings.HasPrefix(cm.GetId(), "recalled:summary:"))
		if summary && len(keys) > 0 && containsAny(cm.GetContent(), keys) {
			return "summary"
		}
	}
	if slices.Contains(am.lastHits, e) {
		return "not chosen"
	}
	return "not found"
}

// continuity asks cq on a copy of each agentmem session (and of the
// window's transcript) right after the turns it is about.
func (q *qrun) continuity(cq *dialoggen.Question) error {
	m := convgen.Message{Index: len(q.tr), Role: memoryv1.Role_ROLE_USER, Content: cq.Text, UnixNano: q.tr[len(q.tr)-1].UnixNano + int64(time.Second)}
	for bi, am := range q.mems {
		req := &memoryv1.AppendRequest{CommandId: "c-" + cq.ID, Messages: []*memoryv1.MessageInput{m.Input()}}
		cands, err := am.candidates(req)
		if err != nil {
			return err
		}
		st := am.st.Clone()
		evs, err := st.DecideAppendWith(req, cands, am.env)
		if err != nil {
			return fmt.Errorf("membench: continuity %s: %w", cq.ID, err)
		}
		v := st.Version() + 1
		if err := st.Apply(segmented.Meta{CommandID: req.CommandId, Version: v, Seq: v, TimeUnixNano: am.env.NowUnixNano}, evs); err != nil {
			return err
		}
		c, err := am.render(st.Context())
		if err != nil {
			return err
		}
		q.score(q.rep.Cont[2*bi], cq, c)
	}
	q.push(m)
	defer func() { q.tr, q.tokens = q.tr[:len(q.tr)-1], q.tokens[:len(q.tokens)-1] }()
	for bi, b := range q.cfg.Budgets {
		q.score(q.rep.Cont[2*bi+1], cq, q.rag(b, 100, nil))
	}
	return nil
}

// search measures both engines on the question, over what was said before.
func (q *qrun) search(qq *dialoggen.Question, engines ...Searcher) error {
	limit := q.cfg.RecallK[len(q.cfg.RecallK)-1]
	for i, s := range engines {
		row := q.rep.Search[i]
		hits, err := s.Search(qq.Text, limit)
		if err != nil {
			return err
		}
		rank := -1
		for j, h := range hits {
			if slices.Contains(qq.Evidence, h) {
				rank = j
				break
			}
		}
		if row.ByCat[qq.Category] == nil {
			row.ByCat[qq.Category] = make([]Share, len(q.cfg.RecallK))
		}
		for j, k := range q.cfg.RecallK {
			hit := rank >= 0 && rank < k
			row.All[j].add(hit)
			row.ByCat[qq.Category][j].add(hit)
		}
		if rank >= 0 {
			row.rr += 1 / float64(rank+1)
		}
	}
	return nil
}

// rag is the window + FTS5 baseline: the most recent transcript messages
// fill pct % of the budget (after the system prompt), then the hits, best
// first, fill the rest without duplicates; rendered in conversation order.
// pct 100 and no hits is the sliding window.
func (q *qrun) rag(budget, pct int, hits []int) Context {
	free := budget - q.rom
	recent := free * pct / 100
	keep := make([]bool, len(q.tr))
	used, start := 0, len(q.tr)
	for start > 0 && used+q.tokens[start-1] <= recent {
		start--
		used += q.tokens[start]
		keep[start] = true
	}
	for _, h := range hits {
		if h < start && !keep[h] && used+q.tokens[h] <= free {
			keep[h] = true
			used += q.tokens[h]
		}
	}
	return q.render(func(i int) bool { return keep[i] })
}

// render is the system prompt and the kept transcript messages, in order;
// a tool result whose call is not kept is dropped (a chat API refuses it).
func (q *qrun) render(keep func(int) bool) Context {
	c := Context{Used: q.rom, Other: q.rom}
	var b strings.Builder
	b.WriteString(q.conv.SystemPrompt)
	b.WriteString("\n")
	calls := map[string]bool{}
	for i := range q.tr {
		if !keep(i) {
			continue
		}
		m := &q.tr[i]
		if m.Role == memoryv1.Role_ROLE_TOOL && !calls[m.ToolCallID] {
			continue
		}
		for _, tc := range m.ToolCalls {
			calls[tc.Id] = true
		}
		b.WriteString(m.Text())
		b.WriteString("\n")
		c.Used += q.tokens[i]
		c.Verbatim += q.tokens[i]
		c.VerbatimMessages++
	}
	c.Text = b.String()
	return c
}
