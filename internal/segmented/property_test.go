package segmented

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

var vocabulary = strings.Fields(`the a user asked about invoice order shipping Paris Berlin Alice Bob
we decided to use plan 42 7 2024 3.5 database table customer error retry timeout will must
should report total amount is was and or not with for from query result rows status ok fails`)

// model is what the test remembers of the accepted history, independently
// of the State.
type model struct {
	groups     map[uint64][]uint64 // assistant message seq -> seqs of the group (assistant first)
	callOwner  map[string]uint64   // call id -> assistant message seq
	openCalls  []string
	lastUser   uint64
	romByTurn  map[uint32]uint32
	msgIDs     []string
	nextCall   int
	nextMsg    int
	nextSchema int
	// stored: every accepted message, the recall candidates' pool.
	stored []*memoryv1.Message
}

// genCandidates draws assembler candidates: stored messages (some still
// verbatim in L1) and scope entries of every tier, some too big for a tier.
func (m *model) genCandidates(t *rapid.T) *Candidates {
	if rapid.IntRange(0, 3).Draw(t, "no_cands") == 0 {
		return nil
	}
	c := &Candidates{}
	if len(m.stored) > 0 {
		scored := rapid.Bool().Draw(t, "scored")
		for range rapid.IntRange(0, 12).Draw(t, "nrecall") {
			c.Recall = append(c.Recall, rapid.SampledFrom(m.stored).Draw(t, "recall"))
			if scored {
				c.RecallScores = append(c.RecallScores, float64(rapid.IntRange(0, 20).Draw(t, "score")))
			}
		}
	}
	for range rapid.IntRange(0, 10).Draw(t, "nmemory") {
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{
			Scope:   rapid.SampledFrom([]string{"agent:a1", "session:prop", "user:u1", "project:p", "global"}).Draw(t, "scope"),
			Key:     fmt.Sprintf("k%d", rapid.IntRange(0, 6).Draw(t, "mkey")),
			Version: uint64(rapid.IntRange(1, 9).Draw(t, "mver")),
			Text:    words(t, "mval", 1, rapid.SampledFrom([]int{10, 60, 400}).Draw(t, "msize")),
			Tier:    rapid.SampledFrom([]string{TierTask, TierUser, TierGlobal, "bogus"}).Draw(t, "tier"),
		})
	}
	return c
}

func words(t *rapid.T, label string, lo, hi int) string {
	n := rapid.IntRange(lo, hi).Draw(t, label+"_len")
	w := make([]string, n)
	for i := range w {
		w[i] = rapid.SampledFrom(vocabulary).Draw(t, label+"_w")
	}
	s := strings.Join(w, " ")
	if rapid.Bool().Draw(t, label+"_q") {
		s += "?"
	} else {
		s += "."
	}
	return s
}

func (m *model) msgID(t *rapid.T) string {
	switch rapid.IntRange(0, 40).Draw(t, "id_kind") {
	case 0, 2, 3, 4:
		m.nextMsg++
		return fmt.Sprintf("c-%d", m.nextMsg)
	case 1:
		if len(m.msgIDs) > 0 {
			return rapid.SampledFrom(m.msgIDs).Draw(t, "dup_id") // 409 expected
		}
	}
	return ""
}

func (m *model) genAppend(t *rapid.T) *memoryv1.AppendRequest {
	var msgs []*memoryv1.MessageInput
	n := rapid.IntRange(1, 4).Draw(t, "batch")
	open := slices.Clone(m.openCalls)
	for range n {
		var in *memoryv1.MessageInput
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0, 1, 2:
			in = user(words(t, "user", 1, 60))
		case 3, 4:
			in = assistant(words(t, "asst", 1, 80))
		case 5:
			var calls []*memoryv1.ToolCall
			for range rapid.IntRange(1, 3).Draw(t, "ncalls") {
				m.nextCall++
				id := fmt.Sprintf("call_%d", m.nextCall)
				calls = append(calls, call(id, rapid.SampledFrom([]string{"search", "sql", "fetch"}).Draw(t, "tool")))
				open = append(open, id)
			}
			in = assistant("", calls...)
		case 6, 7:
			if len(open) == 0 {
				in = assistant(words(t, "asst", 1, 30))
				break
			}
			if rapid.IntRange(0, 30).Draw(t, "bogus") == 0 {
				in = toolResult("call_nope", "nothing") // 400 expected
				break
			}
			i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
			in = toolResult(open[i], words(t, "tool", 1, 150))
			open = slices.Delete(open, i, i+1)
		case 8:
			// Huge: usually more than the whole budget (413).
			in = user(strings.Repeat(words(t, "huge", 50, 100)+" ", rapid.IntRange(5, 60).Draw(t, "rep")))
		default:
			in = assistant(words(t, "long", 100, 300))
		}
		in.Id = m.msgID(t)
		msgs = append(msgs, in)
	}
	return &memoryv1.AppendRequest{Messages: msgs}
}

func genKernel(t *rapid.T, m *model) *memoryv1.KernelRequest {
	name := rapid.SampledFrom([]string{"search", "sql", "fetch", "plot"}).Draw(t, "kname")
	switch rapid.IntRange(0, 6).Draw(t, "kop") {
	case 0:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DefineTool{DefineTool: &memoryv1.ToolDefinition{
			Name: name, Description: words(t, "desc", 1, 40), ParametersJson: `{"type":"object"}`}}}
	case 1:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_RemoveTool{RemoveTool: name}}
	case 2:
		m.nextSchema++
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_CacheSchema{CacheSchema: &memoryv1.SchemaEntry{
			Name: fmt.Sprintf("t%d", rapid.IntRange(0, 14).Draw(t, "schema")), Schema: words(t, "schema", 1, 40)}}}
	case 3:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_SetFact{SetFact: &memoryv1.Fact{Key: name, Value: words(t, "fact", 1, 20)}}}
	case 4:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DeleteFact{DeleteFact: name}}
	default:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{
			SystemPrompt: words(t, "rom", 1, rapid.SampledFrom([]int{30, 200, 3000}).Draw(t, "romsize"))}}}
	}
}

// observe records an accepted append in the model.
func (m *model) observe(evs []proto.Message) {
	for _, ev := range evs {
		ma, ok := ev.(*memoryv1.MessagesAppended)
		if !ok {
			continue
		}
		for _, msg := range ma.Messages {
			m.msgIDs = append(m.msgIDs, msg.Id)
			m.stored = append(m.stored, msg)
			switch msg.Role {
			case memoryv1.Role_ROLE_USER:
				m.lastUser = msg.Seq
			case memoryv1.Role_ROLE_ASSISTANT:
				if len(msg.ToolCalls) > 0 {
					m.groups[msg.Seq] = []uint64{msg.Seq}
					for _, c := range msg.ToolCalls {
						m.callOwner[c.Id] = msg.Seq
						m.openCalls = append(m.openCalls, c.Id)
					}
				}
			case memoryv1.Role_ROLE_TOOL:
				owner := m.callOwner[msg.ToolCallId]
				m.groups[owner] = append(m.groups[owner], msg.Seq)
				m.openCalls = slices.DeleteFunc(m.openCalls, func(id string) bool { return id == msg.ToolCallId })
			}
		}
	}
}

// checkModel verifies the invariants that need the history.
func (m *model) checkModel(t *rapid.T, s *State) {
	snap := s.Snapshot()
	verbatim := map[uint64]bool{}
	for _, e := range snap.L1 {
		if msg := e.GetMessage(); msg != nil {
			verbatim[msg.Seq] = true
		}
	}
	for owner, ids := range m.groups {
		n := 0
		for _, id := range ids {
			if verbatim[id] {
				n++
			}
		}
		if n != 0 && n != len(ids) {
			t.Fatalf("tool-call group %d split: %d of %v verbatim", owner, n, ids)
		}
	}
	if m.lastUser != 0 && !verbatim[m.lastUser] {
		t.Fatalf("latest user message seq %d is not verbatim in L1", m.lastUser)
	}
	// Everything after the latest user message is verbatim too.
	if m.lastUser != 0 {
		after := false
		for _, e := range snap.L1 {
			if msg := e.GetMessage(); msg != nil && msg.Seq == m.lastUser {
				after = true
			} else if after && e.GetSummary() != nil {
				t.Fatalf("summary %s after the latest user message", e.GetSummary().Id)
			}
		}
	}
	if v, ok := m.romByTurn[s.Turn()]; ok && v != snap.Rom.GetVersion() {
		t.Fatalf("ROM changed within turn %d: %d -> %d", s.Turn(), v, snap.Rom.GetVersion())
	}
	m.romByTurn[s.Turn()] = snap.Rom.GetVersion()
}

// eventKinds counts the compression events a property run decided, so the
// test can say it covered every kind.
type eventKinds map[string]int

func (k eventKinds) note(evs []proto.Message) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case *memoryv1.L1Summarized:
			k["summarized in place"]++
		case *memoryv1.L1Evicted:
			if len(e.MovedSummaryIds) > 0 {
				k["moved to L2"]++
			}
			if e.Summary != nil {
				k["evicted to L2"]++
			}
		case *memoryv1.L2Archived:
			if e.Condensed != nil {
				k["archived, condensed"]++
			} else {
				k["archived"]++
			}
		case *memoryv1.ContextAssembled:
			if len(e.GetSections().GetRecalled()) > 0 {
				k["recalled"]++
			}
			if len(e.GetSections().GetMemory()) > 0 {
				k["memory"]++
			}
		}
	}
}

func TestPropertyCommandStreams(t *testing.T) {
	tok := tokenizerT(t)
	seen := eventKinds{}
	defer func() {
		t.Logf("compression events decided: %v", seen)
		for _, k := range []string{"summarized in place", "moved to L2", "evicted to L2", "archived, condensed", "archived", "recalled", "memory"} {
			if seen[k] == 0 && !t.Failed() {
				t.Errorf("no %q event in the whole run: the generator no longer covers it", k)
			}
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		env := Env{NowUnixNano: 42, Tokenizer: tok}
		s := New()
		profile := rapid.SampledFrom([]string{ProfileFill, ProfileBalanced, ProfileDataIntensive, ProfileConversational}).Draw(rt, "profile")
		req := &memoryv1.CreateSessionRequest{
			Profile:              profile,
			MaxContextTokens:     uint32(rapid.IntRange(2000, 8000).Draw(rt, "max_context")),
			ReservedOutputTokens: 500,
			MaxL2Tokens:          uint32(rapid.IntRange(200, 3000).Draw(rt, "max_l2")),
			SystemPrompt:         "You are a careful assistant.",
		}
		evs, err := s.DecideCreate(req, "prop", env)
		if err != nil {
			rt.Fatalf("create: %v", err)
		}
		commit(rt, s, "create", evs)
		m := &model{groups: map[uint64][]uint64{}, callOwner: map[string]uint64{}, romByTurn: map[uint32]uint32{}}
		steps := rapid.IntRange(1, 120).Draw(rt, "steps")
		for i := range steps {
			before := marshal(rt, s.Snapshot())
			var evs []proto.Message
			var err error
			k := rapid.IntRange(0, 19).Draw(rt, "cmd")
			forceResume := s.Status() == memoryv1.SessionStatus_SESSION_STATUS_PAUSED && rapid.Bool().Draw(rt, "resume")
			switch {
			case forceResume:
				evs, err = s.DecideStatus(&memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_RESUME})
			case k < 13:
				cands := m.genCandidates(rt)
				offer(s, cands)
				evs, err = s.DecideAppendWith(m.genAppend(rt), cands, env)
			case k == 13 && rapid.Bool().Draw(rt, "clear"):
				evs, err = s.DecideClearPromoted()
			case k < 17:
				evs, err = s.DecideKernel(genKernel(rt, m), env)
			case k == 17:
				action := memoryv1.StatusAction_STATUS_ACTION_RESUME
				switch a := rapid.IntRange(0, 39).Draw(rt, "action"); {
				case a < 12:
					action = memoryv1.StatusAction_STATUS_ACTION_PAUSE
				case a == 38:
					action = memoryv1.StatusAction_STATUS_ACTION_TERMINATE
				case a == 39:
					action = memoryv1.StatusAction_STATUS_ACTION_ARCHIVE
				}
				evs, err = s.DecideStatus(&memoryv1.StatusRequest{Action: action})
			case k == 18:
				if ps := s.PendingSummaries(); len(ps) > 0 {
					p := rapid.SampledFrom(ps).Draw(rt, "summary")
					text := truncateTokens(p.Text, rapid.IntRange(1, int(p.Tokens)+10).Draw(rt, "newlen"), tok)
					if text == "" {
						text = "x"
					}
					evs, err = s.DecideReplaceSummary(p.Id, text, "", env)
				} else {
					evs, err = s.DecideStateSet("session:k", []byte("v"))
				}
			default:
				evs, err = s.DecideStateSet(fmt.Sprintf("session:k%d", rapid.IntRange(0, 3).Draw(rt, "key")), []byte(words(rt, "val", 1, 5)))
			}
			after := marshal(rt, s.Snapshot())
			if !bytes.Equal(before, after) {
				rt.Fatalf("step %d: Decide mutated the state", i)
			}
			if err != nil {
				if rejection(err) == nil {
					rt.Fatalf("step %d: non-rejection error: %v", i, err)
				}

			} else {
				checkCompressionEvents(rt, s, evs)
				seen.note(evs)
				commit(rt, s, fmt.Sprintf("cmd-%d", i), evs)
				m.observe(evs)
			}
			checkInvariants(rt, s)
			m.checkModel(rt, s)
		}
	})
}
