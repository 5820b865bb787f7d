package membench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The cross-session mode: a user comes back in a new session; is what
// they said before in the context? It runs a real node (node.Start with an
// embedded NATS in a temporary directory) and drives it with the Go client
// as an application would:
//
//   - per dialogue one user id and one agent id; each sitting is a session
//     of both (created with the sitting budget), its turns appended one per
//     append request with said_unix_nano at the sitting's date, then
//     terminated; the run waits until consolidation of the sitting has
//     finished (its consolidated/<session> marker in the user's scope)
//     before the next sitting, as days pass between sittings;
//   - each question is the first user message of a NEW session of that
//     user and agent, one per budget, and the context is read rendered for
//     OpenAI. Each question is asked Repeats times (new sessions each time)
//     and the contexts compared: identical requests should give identical
//     contexts. Every question session is erased once read (and the erase
//     projected), so each question sees the same history: the sittings,
//     never an earlier question.
//
// Beside agentmem, at the same budget (tokens counted with the project's
// tokenizer as the session counts a message):
//
//   - RAG over the user's whole history: SQLite FTS5 bm25() hits for the
//     question over every turn of every sitting, filling the room (after
//     the system prompt and the question) in rank order, each turn shown
//     with its day ("[2023-05-08] Noor: …");
//   - agentmem's own user-scope search (SEARCH_SCOPE_USER, top SearchK) as
//     a tool result, its hits in rank order with their days while they
//     fit (searched before the question is appended);
//   - the full transcript: every sitting, each turn with its day, whatever
//     the budget: the ceiling.

// CrossConfig is the cross-session mode.
type CrossConfig struct {
	// Budgets are the question sessions' budgets (max_context −
	// reserved_output), ascending.
	Budgets []int
	// SittingBudget is the budget of the sittings' sessions (0: the
	// largest of Budgets).
	SittingBudget int
	// RAGHits is how many FTS5 hits the RAG baseline fetches to fill its
	// room with.
	RAGHits int
	// SearchK is the limit of the user-scope search baseline (1..20).
	SearchK int
	// Repeats is how many new sessions ask each question at each budget
	// (>= 1; the first is scored, the others compared with it).
	Repeats int
	// MaxQuestions caps the questions asked per dialogue (0: all), for
	// short runs.
	MaxQuestions int
	// ConsolidationWait bounds the wait for a sitting's consolidation.
	ConsolidationWait time.Duration
	// Dir holds the node's data; "" = a temporary directory.
	Dir string
	// Progress, when set, receives a line per dialogue and phase.
	Progress io.Writer
}

// DefaultCrossConfig is the cross-session mode of `make bench-memory`.
func DefaultCrossConfig() CrossConfig {
	return CrossConfig{Budgets: []int{4096, 16384}, RAGHits: 1000, SearchK: 20, Repeats: 2, ConsolidationWait: 2 * time.Minute}
}

// Validate checks the CrossConfig.
func (c CrossConfig) Validate() error {
	switch {
	case len(c.Budgets) == 0 || !slices.IsSorted(c.Budgets) || c.Budgets[0] < segmented.MinBudget:
		return fmt.Errorf("%w: Budgets must be ascending and >= %d", ErrConfig, segmented.MinBudget)
	case c.SittingBudget != 0 && c.SittingBudget < segmented.MinBudget:
		return fmt.Errorf("%w: SittingBudget must be 0 or >= %d", ErrConfig, segmented.MinBudget)
	case c.RAGHits < 1:
		return fmt.Errorf("%w: RAGHits must be >= 1", ErrConfig)
	case c.SearchK < 1 || c.SearchK > 20:
		return fmt.Errorf("%w: SearchK must be in 1..20", ErrConfig)
	case c.Repeats < 1:
		return fmt.Errorf("%w: Repeats must be >= 1", ErrConfig)
	case c.MaxQuestions < 0:
		return fmt.Errorf("%w: MaxQuestions must be >= 0", ErrConfig)
	case c.ConsolidationWait <= 0:
		return fmt.Errorf("%w: ConsolidationWait must be > 0", ErrConfig)
	}
	return nil
}

// The rows of the cross-session mode, per budget.
const (
	rowXAgentmem = "agentmem, new session"
	rowXRAG      = "RAG over the user's history (FTS5 hits filling the room)"
	rowXSearch   = "agentmem user-scope search as a tool"
	rowXFull     = "full transcript (whole history, over the budget: ceiling)"
)

var crossRows = []string{rowXAgentmem, rowXRAG, rowXSearch, rowXFull}

// XShare is one memory's score on a set of questions.
type XShare struct {
	// Evidence: every evidence turn's text is in the context; AnyEvidence:
	// one of them is.
	Evidence, AnyEvidence Share
	// Answer: every content word of the gold answer is a word of the
	// context (questions whose answer has content words).
	Answer Share
	// Dated: of the evidence turns of temporal questions found in the
	// context, those printed with their sitting's day near them.
	Dated Share
}

// CrossRow is one memory at one budget.
type CrossRow struct {
	Budget int
	Memory string
	All    XShare
	ByCat  map[string]*XShare
	// MeanUsed: tokens of the context, mean over the questions.
	MeanUsed float64
	used     int
}

func (r *CrossRow) cat(c string) *XShare {
	if r.ByCat[c] == nil {
		r.ByCat[c] = &XShare{}
	}
	return r.ByCat[c]
}

// XWhere is where agentmem's evidence turns went in the new session, one
// count per evidence turn of every question.
type XWhere struct {
	Budget int
	// L1: verbatim in the new session's own messages (L1 or promoted);
	// Recalled: in the recalled section (from another session); Memory: a
	// memory entry consolidated from the turn is in the memory section;
	// Summary: a summary in the context holds the answer's words;
	// NotChosen: none of these, but among the user-scope search's top
	// SearchK for the question or recalled at the largest budget (found,
	// no room); NotFound: not even that.
	L1, Recalled, Memory, Summary, NotChosen, NotFound int
}

// Total is every evidence turn counted.
func (w XWhere) Total() int {
	return w.L1 + w.Recalled + w.Memory + w.Summary + w.NotChosen + w.NotFound
}

// CrossReport is the result of RunCross.
type CrossReport struct {
	Config     CrossConfig
	Source     string
	Categories []string
	Dialogues  int
	Sittings   int
	Turns      int
	// Tokens of every turn as stored (content and message overhead).
	Tokens    int
	Questions int
	ByCat     map[string]int
	// Entries are the user's and the agent's entries consolidation wrote
	// (current, markers left out), over every dialogue.
	Entries int
	Rows    []*CrossRow // budget-major, crossRows order
	Where   []XWhere
	// Differ: per budget, questions whose repeated new sessions did not
	// get the same context (of the questions asked more than once).
	Differ []Share
	// Differing names the questions behind Differ (conversation, question
	// index, budget), at most maxDiffering.
	Differing []string
	// Ingest and Ask: wall time of the sittings (consolidation included)
	// and of the questions.
	Ingest, Ask time.Duration
}

// RunCross runs the cross-session mode on ds.
func RunCross(ctx context.Context, cfg CrossConfig, ds []*Dialogue, source string, cats []string) (*CrossReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, d := range ds {
		if err := d.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.SittingBudget == 0 {
		cfg.SittingBudget = cfg.Budgets[len(cfg.Budgets)-1]
	}
	tok, err := segmented.NewTokenizer()
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := workDir(cfg.Dir, "membench-x-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ncfg := node.DefaultConfig()
	ncfg.DataDir, ncfg.NATSListen, ncfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(ctx, ncfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, fmt.Errorf("membench: start a node: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(sctx)
	}()
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		return nil, fmt.Errorf("membench: connect to the node: %w", err)
	}
	defer nc.Close()
	rep := &CrossReport{Config: cfg, Source: source, Categories: cats, ByCat: map[string]int{}}
	for _, b := range cfg.Budgets {
		for _, name := range crossRows {
			rep.Rows = append(rep.Rows, &CrossRow{Budget: b, Memory: name, ByCat: map[string]*XShare{}})
		}
		rep.Where = append(rep.Where, XWhere{Budget: b})
		rep.Differ = append(rep.Differ, Share{})
	}
	for _, d := range ds {
		x := &xrun{cfg: cfg, rep: rep, d: d, tok: tok, node: n, c: client.New(nc).WithTimeout(time.Minute)}
		if err := x.run(ctx); err != nil {
			return nil, fmt.Errorf("membench: cross-session, %s: %w", d.Name, err)
		}
	}
	for _, r := range rep.Rows {
		if r.All.Evidence.N > 0 {
			r.MeanUsed = float64(r.used) / float64(r.All.Evidence.N)
		}
	}
	return rep, nil
}

// xrun is one dialogue of the cross-session mode.
type xrun struct {
	cfg  CrossConfig
	rep  *CrossReport
	d    *Dialogue
	tok  segmented.Tokenizer
	node *node.Node
	c    *client.Client

	user, agent, prompt string
	// turns: every turn of the dialogue in order; byID its index by turn
	// id; byMsg by the session and message id agentmem gave it.
	turns []xturn
	byID  map[string]int
	byMsg map[string]int
	// sources: the turns each current consolidated entry names, by
	// "scope/key" as the memory section names it.
	sources map[string][]int
	fts     *fts5Searcher
}

type xturn struct {
	text    string // the turn's text, as looked for in a context
	content string // as stored: the speaker's name, then the text
	sitting int
	at      int64
	tokens  int
	dated   string // "[2023-05-08] " + content: as the baselines show it
}

func (x *xrun) progress(format string, args ...any) {
	if x.cfg.Progress != nil {
		fmt.Fprintf(x.cfg.Progress, "membench: cross %s: "+format+"\n", append([]any{x.d.Name}, args...)...)
	}
}

func (x *xrun) run(ctx context.Context) error {
	d := x.d
	x.user, x.agent = "user-"+d.Name, "agent-"+d.Name
	x.prompt = fmt.Sprintf("You are %s, chatting with your friend %s. Keep track of what you both share; answer from the conversation.", d.Speakers[1], d.Speakers[0])
	x.byID, x.byMsg, x.sources = map[string]int{}, map[string]int{}, map[string][]int{}
	for s, st := range d.Sittings {
		for i := range st.Turns {
			t := &st.Turns[i]
			c := d.Content(t)
			at := d.TurnTime(s, i)
			x.byID[t.ID] = len(x.turns)
			x.turns = append(x.turns, xturn{text: t.Text, content: c, sitting: s, at: at, tokens: x.tok.Count(c) + segmented.MessageOverheadTokens,
				dated: "[" + time.Unix(0, at).UTC().Format(time.DateOnly) + "] " + c})
		}
	}
	x.rep.Dialogues++
	x.rep.Sittings += len(d.Sittings)
	x.rep.Turns += len(x.turns)
	for _, t := range x.turns {
		x.rep.Tokens += t.tokens
	}
	fs, err := newFTS5Searcher()
	if err != nil {
		return err
	}
	defer func() { _ = fs.Close() }()
	x.fts = fs
	for i, t := range x.turns {
		if err := fs.Add([]convgen.Message{{Index: i, Content: t.content}}); err != nil {
			return err
		}
	}
	start := time.Now()
	for s := range d.Sittings {
		if err := x.sitting(ctx, s); err != nil {
			return err
		}
	}
	if err := x.readEntries(ctx); err != nil {
		return err
	}
	x.rep.Ingest += time.Since(start)
	x.progress("%d sittings ingested and consolidated in %s", len(d.Sittings), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	qs := d.Questions
	if x.cfg.MaxQuestions > 0 && len(qs) > x.cfg.MaxQuestions {
		qs = qs[:x.cfg.MaxQuestions]
	}
	last := x.turns[len(x.turns)-1].at
	for i := range qs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := x.question(ctx, i, &qs[i], last+int64(24*time.Hour)); err != nil {
			return fmt.Errorf("question %d: %w", i, err)
		}
	}
	x.rep.Ask += time.Since(start)
	x.progress("%d questions asked in %s", len(qs), time.Since(start).Round(time.Millisecond))
	return nil
}

// sitting ingests sitting s as one session, terminates it and waits for
// its consolidation.
func (x *xrun) sitting(ctx context.Context, s int) error {
	sid := fmt.Sprintf("%s-s%02d", x.d.Name, s+1)
	if _, err := x.c.CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{
		UserId: x.user, AgentId: x.agent, SystemPrompt: x.prompt,
		MaxContextTokens: uint32(x.cfg.SittingBudget + reservedOutput), ReservedOutputTokens: reservedOutput,
	}); err != nil {
		return fmt.Errorf("create %s: %w", sid, err)
	}
	st := &x.d.Sittings[s]
	for i := range st.Turns {
		t := &st.Turns[i]
		role := memoryv1.Role_ROLE_USER
		if t.Speaker == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		g := x.byID[t.ID]
		r, err := x.c.AppendMessages(ctx, sid, &memoryv1.MessageInput{Role: role, Content: x.turns[g].content, SaidUnixNano: x.turns[g].at})
		if err != nil {
			return fmt.Errorf("append %s to %s: %w", t.ID, sid, err)
		}
		for _, id := range r.GetMessageIds() {
			x.byMsg[sid+"/"+id] = g
		}
	}
	if _, err := x.c.SetStatus(ctx, sid, memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "sitting over"); err != nil {
		return fmt.Errorf("terminate %s: %w", sid, err)
	}
	return x.awaitConsolidation(ctx, sid)
}

// consolidatedKey is the marker consolidation writes in the user's scope
// when it has finished with a session.
const consolidatedKey = "consolidated/"

// awaitConsolidation polls the user's scope for sid's consolidation marker.
func (x *xrun) awaitConsolidation(ctx context.Context, sid string) error {
	wctx, cancel := context.WithTimeout(ctx, x.cfg.ConsolidationWait)
	defer cancel()
	for {
		_, err := x.c.GetEntry(wctx, client.User(x.user), consolidatedKey+sid, 0)
		if err == nil {
			return nil
		}
		if client.Code(err) != 404 {
			return fmt.Errorf("consolidation marker of %s: %w", sid, err)
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("consolidation of %s not finished after %s: %w", sid, x.cfg.ConsolidationWait, wctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readEntries maps the consolidated entries of the user's and the agent's
// scopes to the turns they were read from.
func (x *xrun) readEntries(ctx context.Context) error {
	for _, sc := range []client.Scope{client.User(x.user), client.Agent(x.agent)} {
		req := &memoryv1.ListEntriesRequest{Limit: 1000}
		for {
			r, err := x.c.ListEntries(ctx, sc, req)
			if err != nil {
				return fmt.Errorf("list %s: %w", sc, err)
			}
			for _, e := range r.GetEntries() {
				if strings.HasPrefix(e.GetKey(), consolidatedKey) || e.GetDeleted() {
					continue
				}
				x.rep.Entries++
				src := e.GetMetadata()["source_session"]
				var turns []int
				for _, id := range strings.Split(e.GetMetadata()["source_messages"], ",") {
					if g, ok := x.byMsg[src+"/"+id]; ok {
						turns = append(turns, g)
					}
				}
				x.sources[sc.String()+"/"+e.GetKey()] = turns
			}
			if r.GetNextPageToken() == "" {
				break
			}
			req.PageToken = r.GetNextPageToken()
		}
	}
	return nil
}

// xcontext is a context as scored: its text and its tokens.
type xcontext struct {
	text string
	used int
}

// question asks q in new sessions at every budget and scores the contexts.
func (x *xrun) question(ctx context.Context, qi int, q *DialogueQuestion, at int64) error {
	x.rep.Questions++
	x.rep.ByCat[q.Category]++
	var ev []int
	for _, e := range q.Evidence {
		ev = append(ev, x.byID[e])
	}
	want := answerWords(q.Answer)
	full := x.full(q.Text)
	ragHits, err := x.fts.Search(q.Text, x.cfg.RAGHits)
	if err != nil {
		return err
	}
	firsts := make([]*memoryv1.ContextReply, len(x.cfg.Budgets))
	texts := make([]string, len(x.cfg.Budgets))
	var searchHits []*memoryv1.SearchHit
	for bi, b := range x.cfg.Budgets {
		for r := range x.cfg.Repeats {
			sid := fmt.Sprintf("%s-q%03d-b%d-r%d", x.d.Name, qi, b, r)
			reply, hits, err := x.ask(ctx, sid, b, q.Text, at, bi == 0 && r == 0)
			if err != nil {
				return err
			}
			text := openAIText(reply.GetRendered())
			if r == 0 {
				firsts[bi], texts[bi] = reply, text
				if bi == 0 {
					searchHits = hits
				}
				continue
			}
			if r == 1 {
				x.rep.Differ[bi].add(text != texts[bi])
				if text != texts[bi] && len(x.rep.Differing) < maxDiffering {
					x.rep.Differing = append(x.rep.Differing, fmt.Sprintf("%s question %d at %d: %s", x.d.Name, qi, b, firstDiff(texts[bi], text)))
				}
			}
		}
	}
	largest := firsts[len(firsts)-1]
	for bi, b := range x.cfg.Budgets {
		first := firsts[bi]
		if used := int(first.GetUsage().GetUsed()); used > b {
			return fmt.Errorf("agentmem uses %d tokens of a budget of %d", used, b)
		}
		rows := x.rep.Rows[bi*len(crossRows):]
		x.score(rows[0], q, ev, want, xcontext{texts[bi], int(first.GetUsage().GetUsed())})
		x.where(&x.rep.Where[bi], first, ev, want, searchHits, largest)
		rag := x.rag(b, q.Text, ragHits)
		tool := x.searchTool(b, q.Text, searchHits)
		for _, c := range []xcontext{rag, tool} {
			if c.used > b {
				return fmt.Errorf("a baseline uses %d tokens of a budget of %d", c.used, b)
			}
		}
		x.score(rows[1], q, ev, want, rag)
		x.score(rows[2], q, ev, want, tool)
		x.score(rows[3], q, ev, want, full)
	}
	return nil
}

// ask creates session sid of the user at budget b, appends the question
// as its first user message, reads the context (and, when search is set,
// the user-scope search for the question), then erases the session.
func (x *xrun) ask(ctx context.Context, sid string, b int, text string, at int64, search bool) (*memoryv1.ContextReply, []*memoryv1.SearchHit, error) {
	if _, err := x.c.CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{
		UserId: x.user, AgentId: x.agent, SystemPrompt: x.prompt,
		MaxContextTokens: uint32(b + reservedOutput), ReservedOutputTokens: reservedOutput,
	}); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", sid, err)
	}
	// The search runs before the question is appended, so its hits are
	// the user's other sessions: what the tool returns beside the question
	// the agent already holds.
	var hits []*memoryv1.SearchHit
	if search {
		sr, err := x.c.Search(ctx, sid, &memoryv1.SearchRequest{Query: text, Limit: uint32(x.cfg.SearchK), Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER})
		if err != nil {
			return nil, nil, fmt.Errorf("user-scope search from %s: %w", sid, err)
		}
		hits = sr.GetHits()
	}
	if _, err := x.c.AppendMessages(ctx, sid, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text, SaidUnixNano: at}); err != nil {
		return nil, nil, fmt.Errorf("append the question to %s: %w", sid, err)
	}
	reply, err := x.c.ContextAs(ctx, sid, memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI)
	if err != nil {
		return nil, nil, fmt.Errorf("context of %s: %w", sid, err)
	}
	rc, err := x.c.EraseSession(ctx, sid, "membench: question asked")
	if err != nil {
		return nil, nil, fmt.Errorf("erase %s: %w", sid, err)
	}
	if err := x.node.WaitProjected(ctx, rc.GetRemovalSeq()); err != nil {
		return nil, nil, fmt.Errorf("erase of %s projected: %w", sid, err)
	}
	return reply, hits, nil
}

// maxDiffering bounds CrossReport.Differing.
const maxDiffering = 10

// firstDiff shows where a and b part: a few words of each from there.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	cut := func(s string) string {
		s = s[i:]
		if len(s) > 60 {
			s = s[:60]
		}
		return strings.ReplaceAll(s, "\n", " ")
	}
	return fmt.Sprintf("byte %d: %q / %q", i, cut(a), cut(b))
}

// openAIText is the rendered context as scored: every message's role,
// name and content, and tool calls, one after the other.
func openAIText(r *memoryv1.RenderedContext) string {
	var b strings.Builder
	for _, m := range r.GetOpenai() {
		b.WriteString(m.GetRole())
		if m.GetName() != "" {
			b.WriteString(" " + m.GetName())
		}
		b.WriteString(": ")
		b.WriteString(m.GetContent())
		for _, c := range m.GetToolCalls() {
			b.WriteString("\n" + c.GetFunction().GetName() + c.GetFunction().GetArguments())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// score counts one question's context for row r.
func (x *xrun) score(r *CrossRow, q *DialogueQuestion, ev []int, want []string, c xcontext) {
	all, any := true, false
	for _, g := range ev {
		t := &x.turns[g]
		in := strings.Contains(c.text, t.text)
		all, any = all && in, any || in
		if in && q.Category == "temporal" {
			dated := dateShown(c.text, t.text, x.d.Sittings[t.sitting].UnixNano)
			r.All.Dated.add(dated)
			r.cat(q.Category).Dated.add(dated)
		}
	}
	for _, s := range []*XShare{&r.All, r.cat(q.Category)} {
		s.Evidence.add(all)
		s.AnyEvidence.add(any)
		if len(want) > 0 {
			s.Answer.add(hasWords(wordSet(c.text), want))
		}
	}
	r.used += c.used
}

// where classifies each evidence turn in agentmem's context. A turn the
// context lacks was found (searched, not chosen) when the user-scope
// search's top SearchK for the question holds it, or the context of the
// largest budget recalled it (the node searches earlier sessions deeper
// than the search API's 20 hits, as deep as the budget can use: a turn a
// larger room shows was among the candidates).
func (x *xrun) where(w *XWhere, reply *memoryv1.ContextReply, ev []int, want []string, hits []*memoryv1.SearchHit, largest *memoryv1.ContextReply) {
	searched := map[int]bool{}
	for _, h := range hits {
		if g, ok := x.byMsg[h.GetSessionId()+"/"+h.GetMessage().GetId()]; ok {
			searched[g] = true
		}
	}
	for _, g := range ev {
		for _, m := range largest.GetMessages() {
			if m.GetLayer() == segmented.LayerRecalled && strings.Contains(m.GetContent(), x.turns[g].text) {
				searched[g] = true
			}
		}
	}
	for _, g := range ev {
		text := x.turns[g].text
		found := ""
		for _, m := range reply.GetMessages() {
			l := m.GetLayer()
			switch {
			case (l == segmented.LayerL1 || l == segmented.LayerPromoted) && m.GetRole() != memoryv1.Role_ROLE_SYSTEM && strings.Contains(m.GetContent(), text):
				found = "l1"
			case l == segmented.LayerRecalled && strings.Contains(m.GetContent(), text):
				found = "recalled"
			case l == segmented.LayerMemory && slices.Contains(x.sources[strings.TrimPrefix(m.GetId(), "memory:")], g):
				found = "memory"
			}
			if found != "" {
				break
			}
		}
		if found == "" {
			for _, m := range reply.GetMessages() {
				l := m.GetLayer()
				summary := l == segmented.LayerL2 || (l == segmented.LayerL1 && m.GetRole() == memoryv1.Role_ROLE_SYSTEM) ||
					(l == segmented.LayerRecalled && !strings.Contains(m.GetContent(), x.d.Speakers[0]+": ") && !strings.Contains(m.GetContent(), x.d.Speakers[1]+": "))
				if summary && hasWords(wordSet(m.GetContent()), want) {
					found = "summary"
					break
				}
			}
		}
		switch {
		case found == "l1":
			w.L1++
		case found == "recalled":
			w.Recalled++
		case found == "memory":
			w.Memory++
		case found == "summary":
			w.Summary++
		case searched[g]:
			w.NotChosen++
		default:
			w.NotFound++
		}
	}
}

// base is the system prompt and the question: what every baseline sends
// around what it found.
func (x *xrun) base(question string) int {
	return textTokens(x.tok, x.prompt) + textTokens(x.tok, question)
}

// rag is the RAG baseline: the FTS5 hits, best first, each with its day,
// fill the room left by the system prompt and the question (a hit that
// does not fit is skipped for the next), in one system message after the
// prompt.
func (x *xrun) rag(budget int, question string, hits []int) xcontext {
	const header = "Earlier conversation turns that may be relevant:"
	used := x.base(question) + textTokens(x.tok, header)
	var lines []string
	for _, h := range hits {
		n := x.tok.Count("\n" + x.turns[h].dated)
		if used+n <= budget {
			lines = append(lines, x.turns[h].dated)
			used += n
		}
	}
	return x.fit(budget, question, header, lines)
}

// searchTool is the user-scope search baseline: the agent called the
// search tool with the question and its result (the hits in rank order,
// each with its day, while they fit) follows the question.
func (x *xrun) searchTool(budget int, question string, hits []*memoryv1.SearchHit) xcontext {
	const header = "search_conversation result:"
	used := x.base(question) + textTokens(x.tok, header)
	var lines []string
	for _, h := range hits {
		m := h.GetMessage()
		at := m.GetSaidUnixNano()
		if at == 0 {
			at = m.GetCreatedUnixNano()
		}
		line := "[" + time.Unix(0, at).UTC().Format(time.DateOnly) + "] " + m.GetContent()
		n := x.tok.Count("\n" + line)
		if used+n <= budget {
			lines = append(lines, line)
			used += n
		}
	}
	return x.fit(budget, question, header, lines)
}

// fit renders the prompt, the question and header + lines as one more
// message, counted as the session counts messages; lines are dropped from
// the end while the count (which may differ from the sum of the lines'
// by a token at a seam) is over the budget.
func (x *xrun) fit(budget int, question, header string, lines []string) xcontext {
	for {
		block := strings.Join(append([]string{header}, lines...), "\n")
		c := xcontext{text: x.prompt + "\n" + question + "\n" + block + "\n", used: x.base(question) + textTokens(x.tok, block)}
		if c.used <= budget || len(lines) == 0 {
			return c
		}
		lines = lines[:len(lines)-1]
	}
}

// full is the whole history, every turn with its day, then the question.
func (x *xrun) full(question string) xcontext {
	var b strings.Builder
	b.WriteString(x.prompt + "\n")
	used := x.base(question)
	for _, t := range x.turns {
		b.WriteString(t.dated + "\n")
		used += textTokens(x.tok, t.dated)
	}
	b.WriteString(question + "\n")
	return xcontext{text: b.String(), used: used}
}
