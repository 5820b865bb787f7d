package segmented

import (
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Layer names of ContextMessage.layer, in context order.
const (
	LayerROM      = "rom"
	LayerKernel   = "kernel"
	LayerL2       = "l2"
	LayerPromoted = "promoted"
	LayerL1       = "l1"
	// LayerMemory and LayerRecalled (assemble.go) sit after the Kernel and
	// after L2.
)

// The render* functions give the system text of ROM and Kernel items. Decide
// counts the tokens of exactly this text (plus MessageOverheadTokens) and
// stores the count; Context sends the same text with the stored count.

func renderRom(r *memoryv1.Rom) string {
	var b strings.Builder
	b.WriteString(r.GetSystemPrompt())
	if ps := r.GetPatterns(); len(ps) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Patterns:")
		for _, p := range ps {
			b.WriteString("\n- ")
			b.WriteString(p)
		}
	}
	if s := r.GetBackendSchema(); s != "" {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Backend schema:\n")
		b.WriteString(s)
	}
	return b.String()
}

func renderTool(t *memoryv1.ToolDefinition) string {
	s := "Tool " + t.GetName()
	if t.GetDescription() != "" {
		s += ": " + t.GetDescription()
	}
	if t.GetParametersJson() != "" {
		s += "\nParameters: " + t.GetParametersJson()
	}
	return s
}

func renderSchema(sc *memoryv1.SchemaEntry) string {
	return "Schema " + sc.GetName() + ":\n" + sc.GetSchema()
}

// renderToolResultRef is the Kernel's line for a recent tool result: the
// tool and the call id the model knows (the message id and stream sequence
// are the node's own bookkeeping, kept in the ref, not shown to the model).
func renderToolResultRef(r *memoryv1.ToolResultRef) string {
	return fmt.Sprintf("Recent tool result: %s (call %s)", r.GetToolName(), r.GetToolCallId())
}

func renderFact(f *memoryv1.Fact) string {
	return "Fact " + f.GetKey() + ": " + f.GetValue()
}

// textTokens is the stored token count of one rendered item.
func textTokens(tok Tokenizer, text string) uint32 {
	return uint32(tok.Count(text) + MessageOverheadTokens)
}

// romTokens counts a ROM as one system message (0 when it is empty).
func romTokenCount(tok Tokenizer, r *memoryv1.Rom) uint32 {
	text := renderRom(r)
	if text == "" {
		return 0
	}
	return textTokens(tok, text)
}

// messageTokens is the count stored in a Message: its content, tool call
// names and arguments, plus the per-message overhead.
// DayMark is what the context shows before a dated message (one with
// said_unix_nano): "[2023-05-08] "; "" for 0.
func DayMark(saidUnixNano int64) string {
	if saidUnixNano == 0 {
		return ""
	}
	return "[" + time.Unix(0, saidUnixNano).UTC().Format(time.DateOnly) + "] "
}

func messageTokens(tok Tokenizer, content string, calls []*memoryv1.ToolCall) uint32 {
	n := tok.Count(content) + MessageOverheadTokens
	for _, c := range calls {
		n += tok.Count(c.GetName()) + tok.Count(c.GetArguments())
	}
	return uint32(n)
}

// Context returns what to send to the LLM: messages in layer order ROM,
// Kernel, memory, L2, recalled, promoted, L1, with per-layer tokens and usage. The reply is
// built once per version and cached: treat it as read-only.
func (s *State) Context() *memoryv1.ContextReply {
	if s.snap == nil {
		return &memoryv1.ContextReply{}
	}
	if s.ctxCache != nil && s.ctxVersion == s.snap.Version {
		return s.ctxCache
	}
	p := s.snap
	k := p.GetKernel()
	asm := p.GetAssembled()
	n := 1 + len(k.GetTools()) + len(k.GetSchemas()) + len(k.GetToolResults()) + len(k.GetFacts()) +
		len(asm.GetMemory()) + len(p.L2) + len(asm.GetRecalled()) + len(p.Promoted) + len(p.L1)
	// One backing array instead of n allocations: Context is on the hot path.
	backing := make([]memoryv1.ContextMessage, n)
	msgs := make([]*memoryv1.ContextMessage, 0, n)
	sysMsg := func(layer, id, content string, tokens uint32) {
		cm := &backing[len(msgs)]
		cm.Layer, cm.Id, cm.Role, cm.Content, cm.Tokens = layer, id, memoryv1.Role_ROLE_SYSTEM, content, tokens
		msgs = append(msgs, cm)
	}
	verbatim := func(layer string, m *memoryv1.Message, marked bool) {
		cm := &backing[len(msgs)]
		cm.Layer, cm.Id, cm.Role, cm.Content, cm.Name = layer, m.Id, m.Role, m.Content, m.Name
		cm.ToolCalls, cm.ToolCallId, cm.Tokens = m.ToolCalls, m.ToolCallId, m.Tokens
		if m.Dated || marked {
			cm.Content = DayMark(m.SaidUnixNano) + m.Content
		}
		if marked {
			cm.Tokens += DayMarkTokens
		}
		cm.SaidUnixNano = SaidAt(m)
		msgs = append(msgs, cm)
	}
	if text := renderRom(p.Rom); text != "" {
		sysMsg(LayerROM, fmt.Sprintf("rom:v%d", p.Rom.GetVersion()), text, p.Rom.GetTokens())
	}
	for _, t := range k.GetTools() {
		sysMsg(LayerKernel, "tool:"+t.Name, renderTool(t), t.Tokens)
	}
	for _, sc := range k.GetSchemas() {
		sysMsg(LayerKernel, "schema:"+sc.Name, renderSchema(sc), sc.Tokens)
	}
	for _, r := range k.GetToolResults() {
		sysMsg(LayerKernel, "result:"+r.ToolCallId, renderToolResultRef(r), r.Tokens)
	}
	for _, f := range k.GetFacts() {
		sysMsg(LayerKernel, "fact:"+f.Key, renderFact(f), f.Tokens)
	}
	for _, m := range asm.GetMemory() {
		sysMsg(LayerMemory, MemoryID(m, ""), m.Text, m.Tokens)
		if m.Text == "" {
			backing[len(msgs)-1].Memory = m // a reference: HydrateMemory fills it in
		}
	}
	var shownL1, shownL2 uint64
	for _, sum := range p.L2 {
		if showsL2(asm, sum) {
			sysMsg(LayerL2, sum.Id, sum.Text, sum.Tokens)
			shownL2 += uint64(sum.Tokens)
		}
	}
	for _, r := range asm.GetRecalled() {
		id := "recalled:" + r.MessageId
		if r.SummaryId != "" {
			id = "recalled:summary:" + r.SummaryId
		} else if r.SessionId != "" {
			id = "recalled:" + r.SessionId + "/" + r.MessageId
		}
		sysMsg(LayerRecalled, id, r.Text, r.Tokens)
		cm := &backing[len(msgs)-1]
		cm.SaidUnixNano = r.SaidUnixNano
		if r.Text == "" {
			cm.Recalled = r // a reference: Hydrate fills it in
		}
	}
	for _, m := range p.Promoted {
		verbatim(LayerPromoted, m, false)
	}
	for _, e := range p.L1 {
		if !showsL1(asm, e) {
			continue
		}
		shownL1 += uint64(entryTokens(e))
		if m := e.GetMessage(); m != nil {
			marked := len(s.marked) > 0 && s.dayMarked(m)
			if marked {
				shownL1 += DayMarkTokens
			}
			verbatim(LayerL1, m, marked)
		} else if sum := e.GetSummary(); sum != nil {
			sysMsg(LayerL1, sum.Id, sum.Text, sum.Tokens)
		}
	}
	t := &s.tok
	r := &memoryv1.ContextReply{
		SessionId: p.SessionId,
		Version:   p.Version,
		Seq:       p.LastSeq,
		Messages:  msgs,
		Layers: &memoryv1.LayerTokens{
			Rom: uint32(s.tok.rom), Kernel: uint32(s.tok.kernel), L2: uint32(shownL2),
			Promoted: uint32(s.tok.promoted), L1: uint32(shownL1),
			Memory: uint32(s.tok.memory), Recalled: uint32(s.tok.recalled),
		},
		Usage:      s.usage(t.rom + t.kernel + t.promoted + t.recalled + t.memory + shownL1 + shownL2),
		RomVersion: p.Rom.GetVersion(),
		Turn:       p.Turn,
	}
	s.ctxCache, s.ctxVersion = r, p.Version
	return r
}

// Usage returns the budget and the tokens the context uses now.
func (s *State) Usage() *memoryv1.Usage { return s.usage(s.UsedTokens()) }

// usage is Usage with the tokens used u.
func (s *State) usage(u uint64) *memoryv1.Usage {
	b := s.Budget()
	pct := 0.0
	if b > 0 {
		pct = float64(u) * 100 / float64(b)
	}
	return &memoryv1.Usage{Budget: uint32(b), Used: uint32(u), Percent: pct}
}

// Info returns the session summary of GetSessionReply.
func (s *State) Info() *memoryv1.SessionInfo {
	p := s.snap
	if p == nil {
		return &memoryv1.SessionInfo{}
	}
	return &memoryv1.SessionInfo{
		SessionId:       p.SessionId,
		UserId:          p.UserId,
		App:             p.App,
		Project:         p.Project,
		AgentId:         p.AgentId,
		AgentType:       p.AgentType,
		Status:          p.Status,
		Version:         p.Version,
		Seq:             p.LastSeq,
		TotalMessages:   p.TotalMessages,
		L1Entries:       uint32(len(p.L1)),
		L2Summaries:     uint32(len(p.L2)),
		Promoted:        uint32(len(p.Promoted)),
		Compressions:    p.Compressions,
		ArchivedL2Count: p.ArchivedL2Count,
		Turn:            p.Turn,
		RomVersion:      p.Rom.GetVersion(),
		Usage:           s.Usage(),
		CreatedUnixNano: p.CreatedUnixNano,
		UpdatedUnixNano: p.UpdatedUnixNano,
		Profile:         p.Config.GetProfile().GetName(),
		Assembly:        p.Config.GetAssembly(),
	}
}
