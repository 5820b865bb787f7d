package segmented

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// MaxToolResultRefs is how many recent tool results the Kernel references.
const MaxToolResultRefs = 10

// errNoTokenizer is returned (not a Rejection: a wiring bug) when a decision
// that needs to count tokens gets an Env without a Tokenizer.
var errNoTokenizer = errors.New("segmented: Env.Tokenizer is nil")

// DecideAppend decides an AppendRequest without assembler candidates (see
// DecideAppendWith).
func (s *State) DecideAppend(req *memoryv1.AppendRequest, env Env) ([]proto.Message, error) {
	return s.DecideAppendWith(req, nil, env)
}

// DecideAppendWith decides an AppendRequest. The batch is, in order:
// SessionStatusChanged (CREATED -> ACTIVE, first append only), RomUpdated
// (when a user message starts a turn and a pattern library of the ROM
// changed: see patterns.go), RomActivated (a pending ROM, when a user
// message starts a new turn), MessagesAppended
// (with the token counts and turn of every message), the compression events
// (L1Summarized, L1Evicted, L2Archived), then ContextAssembled (the plan
// and the recalled and memory sections chosen from c for the latest user
// message, when the session assembles its context; see assemble.go), or
// a ContextAssembled trimming the plan when the context would not fit. When the
// budget cannot hold the append with the sections, they are cleared
// instead. It rejects with 404 (no session), 409 (status, duplicate id),
// 400 (tool result without an open call) or 413 (the budget cannot hold the
// messages). It leaves s unchanged.
func (s *State) DecideAppendWith(req *memoryv1.AppendRequest, c *Candidates, env Env) ([]proto.Message, error) {
	if err := ValidateAppend(req); err != nil {
		return nil, err
	}
	if err := s.requireStatus("append", memoryv1.SessionStatus_SESSION_STATUS_CREATED, memoryv1.SessionStatus_SESSION_STATUS_ACTIVE); err != nil {
		return nil, err
	}
	if env.Tokenizer == nil {
		return nil, errNoTokenizer
	}
	out, err := s.decideAppend(req, c, sectionsChoose, env)
	if tooLarge(err) && (s.Assembled() != nil || (c != nil && s.WantsCandidates(req))) {
		return s.decideAppend(req, nil, sectionsClear, env)
	}
	return out, err
}

// sectionsMode is what an append's decision does with the assembled
// sections.
type sectionsMode int

const (
	// sectionsChoose chooses them for the append's latest user message.
	sectionsChoose sectionsMode = iota
	// sectionsClear clears them (the budget cannot hold them).
	sectionsClear
	// sectionsLater leaves them as they are: a later command decides them
	// (DecideAssemble).
	sectionsLater
)

// decideAppend decides one attempt of DecideAppendWith (or of
// DecideAppendLater: mode sectionsLater).
func (s *State) decideAppend(req *memoryv1.AppendRequest, c *Candidates, mode sectionsMode, env Env) ([]proto.Message, error) {
	x := s.index()
	// The previous append's first message, before the simulation makes
	// this append the latest (the plan's own-search bound: searchable).
	s.prevAppendFirst = s.snap.GetLastAppendFirstSeq()
	// Simulate the events on s itself as they are decided (compression
	// needs the result of each step), then roll them back.
	before := s.PlannedTokens()
	s.begin(false)
	defer s.rollback()
	// Room for the events of most appends (the messages, a compression
	// step or two, the sections).
	out := make([]proto.Message, 0, 4)
	emit := func(ev proto.Message) error {
		if err := s.applyEvent(ev, env.NowUnixNano); err != nil {
			return fmt.Errorf("segmented: decided an inconsistent event: %w", err)
		}
		out = append(out, ev)
		return nil
	}
	if s.Status() == memoryv1.SessionStatus_SESSION_STATUS_CREATED {
		if err := emit(&memoryv1.SessionStatusChanged{
			From: memoryv1.SessionStatus_SESSION_STATUS_CREATED, To: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE, Reason: "first append",
		}); err != nil {
			return nil, err
		}
	}
	hasUser := slices.ContainsFunc(req.Messages, func(m *memoryv1.MessageInput) bool { return m.Role == memoryv1.Role_ROLE_USER })
	if hasUser {
		// A library changed: the turn this message starts takes its new
		// ROM version (activated just below), never a turn in flight.
		if ev := s.libraryUpdate(env); ev != nil {
			if err := emit(ev); err != nil {
				return nil, err
			}
		}
	}
	if pr := s.snap.GetPendingRom(); hasUser && pr != nil {
		if err := emit(&memoryv1.RomActivated{Version: pr.Version}); err != nil {
			return nil, err
		}
	}
	appended, err := s.buildMessages(req, env, x)
	if err != nil {
		return nil, err
	}
	if err := emit(appended); err != nil {
		return nil, err
	}
	// Compression first, then the plan: the allocation chooses among what
	// the session's own layers hold after this append (the sections never
	// need compression to make room: they are within the plan's budget).
	comp, err := compress(s, env)
	if err != nil {
		return nil, err
	}
	out = append(out, comp...)
	if ev := s.assembleEvent(appended, c, mode, env); ev != nil {
		if err := emit(ev); err != nil {
			return nil, err
		}
	}
	fit, err := s.fitView(env)
	if err != nil {
		return nil, err
	}
	out = append(out, fit...)
	what := func() string {
		return fmt.Sprintf("%d message(s) of %d tokens", len(appended.Messages), sumTokens(appended.Messages))
	}
	if err := checkBudget(s.Budget(), before, s.PlannedTokens(), "messages", what); err != nil {
		return nil, err
	}
	return out, nil
}

// assembleEvent returns the ContextAssembled event of an append: new
// sections for its latest user message (sectionsChoose, when the session
// assembles), or none (sectionsClear: clear them); nil when nothing
// changes or sectionsLater.
func (s *State) assembleEvent(appended *memoryv1.MessagesAppended, c *Candidates, mode sectionsMode, env Env) proto.Message {
	if mode == sectionsLater {
		return nil
	}
	var latest *memoryv1.Message
	for _, m := range appended.Messages {
		if m.Role == memoryv1.Role_ROLE_USER {
			latest = m
		}
	}
	a := s.Assembly()
	switch {
	case mode == sectionsClear:
		if s.Assembled() == nil {
			return nil
		}
		return &memoryv1.ContextAssembled{Sections: &memoryv1.Assembled{}}
	case latest == nil || a == nil || a.RecallPct+a.MemoryPct == 0:
		return nil
	}
	sec := s.decideSections(latest, c, env)
	if sameSections(sec, s.Assembled()) {
		return nil // unchanged (for_message_id stays the first message they were chosen for)
	}
	return &memoryv1.ContextAssembled{Sections: sec}
}

func sumTokens(ms []*memoryv1.Message) uint64 {
	var n uint64
	for _, m := range ms {
		n += uint64(m.Tokens)
	}
	return n
}

// buildMessages checks the request against the session (unique ids, open
// tool calls) and returns the MessagesAppended event. It reads the indexes
// x of s, which hold the state before the command's events (status and ROM
// events, already simulated, do not change them), so its cost is that of
// the request, not of the session.
//
// Message ids must not be known to the session: verbatim in L1 or
// promoted, or covered by an L1 or L2 summary. (Archived L2 summaries are
// in swap; ids are unique there because client ids can never take the
// server's m<seq> form and clients reuse ids at their risk only after
// archival.) Tool call ids must not be in use: in a verbatim L1 tool call,
// open or answered, or in a Kernel tool result ref. A tool message must
// answer a call still open, in the session or earlier in the request.
func (s *State) buildMessages(req *memoryv1.AppendRequest, env Env, x *indexes) (*memoryv1.MessagesAppended, error) {
	// Calls this request opens (id -> tool name) and the calls it answers:
	// an overlay on x, which stays unchanged.
	var added map[string]string
	var answered map[string]bool
	seen := func(id string) bool {
		_, ok := added[id]
		return ok || x.seenCall(id)
	}
	open := func(id string) (string, bool) {
		if answered[id] {
			return "", false
		}
		if name, ok := added[id]; ok {
			return name, true
		}
		return x.open(id)
	}
	ev := &memoryv1.MessagesAppended{}
	seq, turn := s.snap.NextMessageSeq, s.snap.Turn
	prevSaid, prevText := s.lastSaid(), s.lastText()
	for i, in := range req.Messages {
		// The field, for the errors only: formatted when one is returned.
		f := func() string { return "messages[" + strconv.Itoa(i) + "]" }
		id := in.Id
		if id == "" {
			id = "m" + strconv.FormatUint(seq, 10)
		} else if x.known(id) {
			return nil, reject(CodeConflict, f()+".id", "message %q already exists in the session", id)
		}
		if in.Role == memoryv1.Role_ROLE_USER {
			turn++
		}
		for j, c := range in.ToolCalls {
			if seen(c.Id) {
				return nil, reject(CodeConflict, fmt.Sprintf("%s.tool_calls[%d].id", f(), j), "tool call %q already exists in the session", c.Id)
			}
			if added == nil {
				added = map[string]string{}
			}
			added[c.Id] = c.Name
		}
		m := &memoryv1.Message{
			Id:              id,
			Seq:             seq,
			Role:            in.Role,
			Content:         in.Content,
			Name:            in.Name,
			ToolCalls:       cloneCalls(in.ToolCalls),
			ToolCallId:      in.ToolCallId,
			Turn:            turn,
			CreatedUnixNano: env.NowUnixNano,
			DataRef:         in.DataRef,
			SaidUnixNano:    in.SaidUnixNano,
		}
		if StoresDay(prevSaid, prevText, in.SaidUnixNano) {
			m.Dated = true
			m.Tokens = messageTokens(env.Tokenizer, DayMark(in.SaidUnixNano)+in.Content, in.ToolCalls)
		} else {
			m.Tokens = messageTokens(env.Tokenizer, in.Content, in.ToolCalls)
		}
		prevSaid, prevText = SaidAt(m), m.Content
		if in.Role == memoryv1.Role_ROLE_TOOL {
			name, ok := open(in.ToolCallId)
			if !ok {
				return nil, badRequest(f()+".tool_call_id", "%q matches no open tool call in the session", in.ToolCallId)
			}
			if answered == nil {
				answered = map[string]bool{}
			}
			answered[in.ToolCallId] = true
			ref := &memoryv1.ToolResultRef{ToolCallId: in.ToolCallId, MessageId: id, ToolName: name, MessageSeq: seq}
			ref.Tokens = textTokens(env.Tokenizer, renderToolResultRef(ref))
			ev.ToolResultRefs = append(ev.ToolResultRefs, ref)
		}
		ev.Messages = append(ev.Messages, m)
		seq++
	}
	refs := s.snap.GetKernel().GetToolResults()
	if extra := len(refs) + len(ev.ToolResultRefs) - MaxToolResultRefs; extra > 0 {
		all := append(slices.Clone(refs), ev.ToolResultRefs...)
		for _, r := range all[:extra] {
			ev.DroppedRefs = append(ev.DroppedRefs, r.ToolCallId)
		}
	}
	return ev, nil
}

// lastSaid is when the session's latest message was said (0: none, or
// not verbatim in L1: the next dated message then shows its day).
func (s *State) lastSaid() int64 {
	l1 := s.snap.GetL1()
	if len(l1) == 0 {
		return 0
	}
	return SaidAt(l1[len(l1)-1].GetMessage())
}

// StartsDay reports whether a message said at said (0: not given) starts a
// day after a message said at prev (0: none): the context then shows its
// day (Message.dated).
func StartsDay(prev, said int64) bool { return said != 0 && !sameDay(prev, said) }

// StoresDay reports whether a message said at said is stored dated
// (Message.dated: the context prints its day before it) after a message
// said at prevSaid whose content is prevText: it starts a day, or the
// last day prevText prints is another.
func StoresDay(prevSaid int64, prevText string, said int64) bool {
	return StartsDay(prevSaid, said) || said != 0 && printsOtherDay(prevText, said)
}

// sameDay reports whether two times (Unix nanoseconds, a 0 is no time) fall
// on the same UTC day.
func sameDay(a, b int64) bool {
	if a == 0 || b == 0 {
		return false
	}
	return unixDay(a) == unixDay(b)
}

// unixDay is the UTC day number of t (Unix nanoseconds).
func unixDay(t int64) int64 { return floorDiv(t, int64(24*time.Hour)) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func cloneCalls(cs []*memoryv1.ToolCall) []*memoryv1.ToolCall {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*memoryv1.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = &memoryv1.ToolCall{Id: c.Id, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}
