package inspector

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sectionOrder is the order the context sends its sections in, with the
// names the page shows.
var sectionOrder = []struct{ layer, title, hint string }{
	{segmented.LayerROM, "ROM", "system prompt, patterns, backend schema"},
	{segmented.LayerKernel, "Kernel", "tools, schemas, tool results, facts"},
	{segmented.LayerMemory, "Memory", "scope entries chosen for the latest user message"},
	{segmented.LayerL2, "L2", "summaries of evicted L1 messages"},
	{segmented.LayerRecalled, "Recalled", "turns recalled from swap"},
	{segmented.LayerPromoted, "Promoted", "messages promoted from swap"},
	{segmented.LayerL1, "L1", "recent messages, verbatim, and in-place summaries"},
}

// contextView is one context as the LLM receives it, by section.
type contextView struct {
	SessionID     string
	Version, Seq  uint64
	Turn, Rom     uint32
	Budget, Used  uint32
	Percent       float64
	Sections      []section
	Items, Tokens uint32 // over every section
	OpenAI        string
	Anthropic     string
	// Plan is how the sections were chosen (nil: no plan).
	Plan *planView
	// All, when set, is where the whole of a compact view is fetched: the
	// timeline's panel shows the last panelItems items of each section
	// and no renderings (a context of thousands of messages was tens of
	// thousands of DOM nodes beside the rows).
	All string
}

// panelItems bounds the items of a section in the timeline's panel.
const panelItems = 30

// compact keeps the last panelItems items of each section and drops the
// renderings; all is where the whole view is fetched.
func (v *contextView) compact(all string) {
	cut := false
	for i := range v.Sections {
		s := &v.Sections[i]
		if n := len(s.Items); n > panelItems {
			s.Hidden, s.Items, cut = n-panelItems, s.Items[n-panelItems:], true
		}
	}
	if cut || v.OpenAI != "" {
		v.All, v.OpenAI, v.Anthropic = all, "", ""
	}
}

type section struct {
	Layer, Title, Hint string
	// Tokens is the sum of the items' tokens; Reported what the context
	// reply's layer counts say for this section.
	Tokens, Reported uint32
	Items            []item
	// Hidden is the items left out of a compact view (its first ones).
	Hidden int
	// Share is Tokens as a percentage of the budget (for the bar).
	Share float64
}

type item struct {
	N       int
	Role    string
	ID      string
	Name    string
	Tokens  uint32
	Content string
	Calls   []string
	// Source says where the item comes from: message id, seq and day;
	// scope, key and version; summary range.
	Source string
	// Link opens the item's source (a scope entry, an earlier session);
	// "" for none.
	Link string
	// Why says why it is in the context: always sent, the verbatim
	// tail, or its score and rank among the section's candidates.
	Why string
}

// buildContext lays cx out by section, naming each item's source and why
// it is there from src (the session's state at cx's sequence).
func buildContext(cx *memoryv1.ContextReply, src sources) contextView {
	u := cx.GetUsage()
	v := contextView{SessionID: cx.GetSessionId(), Version: cx.GetVersion(), Seq: cx.GetSeq(), Turn: cx.GetTurn(),
		Rom: cx.GetRomVersion(), Budget: u.GetBudget(), Used: u.GetUsed(), Percent: u.GetPercent()}
	byLayer := map[string]*section{}
	for _, o := range sectionOrder {
		v.Sections = append(v.Sections, section{Layer: o.layer, Title: o.title, Hint: o.hint, Reported: layerTokens(cx.GetLayers(), o.layer)})
	}
	for i := range v.Sections {
		byLayer[v.Sections[i].Layer] = &v.Sections[i]
	}
	for i, m := range cx.GetMessages() {
		s, ok := byLayer[m.GetLayer()]
		if !ok { // a layer this page does not know yet: shown at the end
			v.Sections = append(v.Sections, section{Layer: m.GetLayer(), Title: m.GetLayer()})
			s = &v.Sections[len(v.Sections)-1]
			byLayer[m.GetLayer()] = s
			for j := range v.Sections {
				byLayer[v.Sections[j].Layer] = &v.Sections[j]
			}
			s = byLayer[m.GetLayer()]
		}
		it := item{N: i + 1, Role: roleName(m.GetRole()), ID: m.GetId(), Name: m.GetName(), Tokens: m.GetTokens(), Content: m.GetContent()}
		for _, tc := range m.GetToolCalls() {
			it.Calls = append(it.Calls, fmt.Sprintf("%s %s(%s)", tc.GetId(), tc.GetName(), tc.GetArguments()))
		}
		if m.GetToolCallId() != "" {
			it.Calls = append(it.Calls, "result of "+m.GetToolCallId())
		}
		it.Source, it.Link = src.of(m)
		it.Why = src.why(m)
		s.Items = append(s.Items, it)
		s.Tokens += m.GetTokens()
		v.Items++
		v.Tokens += m.GetTokens()
	}
	v.Plan = src.plan(cx)
	for i := range v.Sections {
		if v.Budget > 0 {
			v.Sections[i].Share = 100 * float64(v.Sections[i].Tokens) / float64(v.Budget)
		}
	}
	mo := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}
	if r := segmented.Render(cx, memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI); r != nil {
		b, _ := mo.Marshal(&memoryv1.RenderedContext{Openai: r.GetOpenai()})
		v.OpenAI = string(b)
	}
	if r := segmented.Render(cx, memoryv1.ContextFormat_CONTEXT_FORMAT_ANTHROPIC); r != nil {
		b, _ := mo.Marshal(&memoryv1.RenderedContext{System: r.GetSystem(), Anthropic: r.GetAnthropic()})
		v.Anthropic = string(b)
	}
	return v
}

func layerTokens(l *memoryv1.LayerTokens, layer string) uint32 {
	switch layer {
	case segmented.LayerROM:
		return l.GetRom()
	case segmented.LayerKernel:
		return l.GetKernel()
	case segmented.LayerMemory:
		return l.GetMemory()
	case segmented.LayerL2:
		return l.GetL2()
	case segmented.LayerRecalled:
		return l.GetRecalled()
	case segmented.LayerPromoted:
		return l.GetPromoted()
	case segmented.LayerL1:
		return l.GetL1()
	}
	return 0
}

func roleName(r memoryv1.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

// sources finds where a context item came from in the session's state,
// and why it is there (the sections' plan and their recorded why).
type sources struct {
	msgs   map[string]*memoryv1.Message
	sums   map[string]*placed
	recall map[string]*memoryv1.RecalledItem
	memory []*memoryv1.MemoryItem // the memory section's items (memoryItem)
	rom    *memoryv1.Rom
	// sec is the sections and plan the context shows (nil: none).
	sec *memoryv1.Assembled
	// recallAt is each recalled item's index in sec (memoryItemAt finds
	// a memory item's).
	recallAt map[string]int
}

func newSources(snap *memoryv1.SessionSnapshot) sources {
	s := emptySources(snap.GetRom(), snap.GetAssembled())
	for _, e := range snap.GetL1() {
		if m := e.GetMessage(); m != nil {
			s.msgs[m.GetId()] = m
		} else if sum := e.GetSummary(); sum != nil {
			s.sums[sum.GetId()] = placedOf(sum, "l1")
		}
	}
	for _, m := range snap.GetPromoted() {
		s.msgs[m.GetId()] = m
	}
	for _, sum := range snap.GetL2() {
		s.sums[sum.GetId()] = placedOf(sum, "l2")
	}
	return s
}

// memoryItem finds the memory section's item of context message id
// ("memory:<scope>/<key>": segmented.MemoryID) and the key the message
// reads: the sections name keys by digest, the context by the key read
// from the scope, or by a digest prefix when it could not be (erased:
// key is then "").
func (s sources) memoryItem(id string) (*memoryv1.MemoryItem, string, bool) {
	it, key, _, ok := s.memoryItemAt(id)
	return it, key, ok
}

// memoryItemAt is memoryItem with the item's index in the section.
func (s sources) memoryItemAt(id string) (*memoryv1.MemoryItem, string, int, bool) {
	scope, name, ok := strings.Cut(strings.TrimPrefix(id, "memory:"), "/")
	if !ok {
		return nil, "", 0, false
	}
	key := name
	if strings.HasPrefix(name, "#") { // no key holds '#' (sharedmem.ValidateKey)
		key = ""
	}
	var sum []byte
	if key != "" {
		sum = segmented.KeySum(key)
	}
	for i, it := range s.memory {
		if it.GetScope() != scope {
			continue
		}
		if (key != "" && bytes.Equal(segmented.ItemKeySum(it), sum)) || (key == "" && segmented.KeyName(it, "") == name) {
			return it, key, i, true
		}
	}
	return nil, "", 0, false
}

// emptySources holds the ROM and the sections; messages and summaries are
// added by the caller.
func emptySources(rom *memoryv1.Rom, sec *memoryv1.Assembled) sources {
	s := sources{msgs: map[string]*memoryv1.Message{}, sums: map[string]*placed{},
		recall: map[string]*memoryv1.RecalledItem{}, memory: sec.GetMemory(), rom: rom, sec: sec,
		recallAt: map[string]int{}}
	for i, r := range sec.GetRecalled() {
		id := recalledID(r)
		s.recall[id], s.recallAt[id] = r, i
	}
	return s
}

// recalledID is the context message id of recalled item r (as
// segmented's context names it).
func recalledID(r *memoryv1.RecalledItem) string {
	switch {
	case r.GetSummaryId() != "":
		return "recalled:summary:" + r.GetSummaryId()
	case r.GetSessionId() != "":
		return "recalled:" + r.GetSessionId() + "/" + r.GetMessageId()
	}
	return "recalled:" + r.GetMessageId()
}

func (s sources) of(m *memoryv1.ContextMessage) (string, string) {
	id := m.GetId()
	switch m.GetLayer() {
	case segmented.LayerROM:
		return romSource(s.rom), ""
	case segmented.LayerKernel:
		kind, name, _ := strings.Cut(id, ":")
		return "kernel " + kind + " " + name, ""
	case segmented.LayerMemory:
		if it, key, ok := s.memoryItem(id); ok {
			kind, sid, _ := strings.Cut(it.GetScope(), ":")
			if it.GetScope() == "global" {
				kind, sid = "global", "global"
			}
			src := fmt.Sprintf("scope %s · key %s · version %d · tier %s", it.GetScope(), segmented.KeyName(it, key), it.GetVersion(), it.GetTier())
			if key == "" && it.GetKey() == "" {
				return src, "" // erased: no key to link to
			}
			return src, fmt.Sprintf("/ui/scopes?kind=%s&id=%s&key=%s", kind, sid, segmented.KeyName(it, key))
		}
	case segmented.LayerRecalled:
		if it, ok := s.recall[id]; ok {
			switch {
			case it.GetSummaryId() != "":
				return fmt.Sprintf("archived summary %s · to seq %d (from swap)", it.GetSummaryId(), it.GetSeq()), ""
			case it.GetSessionId() != "":
				return fmt.Sprintf("message %s · seq %d of earlier session %s", it.GetMessageId(), it.GetSeq(), it.GetSessionId()), "/ui/s/" + it.GetSessionId() + "/conversation"
			}
			return fmt.Sprintf("message %s · seq %d (from swap)", it.GetMessageId(), it.GetSeq()), ""
		}
	}
	if msg, ok := s.msgs[id]; ok {
		return fmt.Sprintf("message %s · seq %d · turn %d · %s", msg.GetId(), msg.GetSeq(), msg.GetTurn(), day(msg)), ""
	}
	if sum, ok := s.sums[id]; ok {
		return fmt.Sprintf("summary of seq %d–%d (%d messages, %d→%d tokens, %s)", sum.first, sum.last,
			sum.messages, sum.covered, sum.tokens, sum.source), ""
	}
	return id, ""
}

// day is the day a message was said (as the writer said, else appended).
func day(m *memoryv1.Message) string {
	t := m.GetSaidUnixNano()
	if t == 0 {
		t = m.GetCreatedUnixNano()
	}
	if t == 0 {
		return "day unknown"
	}
	return time.Unix(0, t).UTC().Format("2006-01-02")
}

// romSource names a ROM version and the pattern libraries it was built
// with (each with the start of its digest): which library text a context
// used.
func romSource(r *memoryv1.Rom) string {
	out := fmt.Sprintf("ROM version %d", r.GetVersion())
	for i, l := range r.GetLibraries() {
		sep := ", "
		if i == 0 {
			sep = " · libraries "
		}
		out += fmt.Sprintf("%s%s@%.8s", sep, l.GetName(), l.GetDigest())
		if l.GetScope() != "" {
			out += " (" + l.GetScope() + ")"
		}
	}
	return out
}
