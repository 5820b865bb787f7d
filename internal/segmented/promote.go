package segmented

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// MaxPromote bounds the messages of one promote command.
const MaxPromote = 50

// DecidePromote copies messages recalled from swap (as stored, token counts
// included) into the promoted layer. Messages already verbatim in L1 or
// already promoted are skipped. The promotion counts in the budget like an
// append: the batch may hold compression events that make room for it (a
// context filled by the fill profile has little free), and when the budget
// cannot hold it even then, 413 says how many tokens are free. Nothing is
// double-counted: promoted tokens are counted once, in the promoted layer.
// It leaves s unchanged.
func (s *State) DecidePromote(msgs []*memoryv1.Message, env Env) ([]proto.Message, error) {
	if err := s.mutable("promote"); err != nil {
		return nil, err
	}
	if env.Tokenizer == nil {
		return nil, errNoTokenizer
	}
	if len(msgs) == 0 {
		return nil, badRequest("message_ids", "required")
	}
	if len(msgs) > MaxPromote {
		return nil, reject(CodeTooLarge, "message_ids", "%d messages, limit %d", len(msgs), MaxPromote)
	}
	present := map[string]bool{}
	for _, m := range s.snap.Promoted {
		present[m.Id] = true
	}
	for _, e := range s.snap.L1 {
		if m := e.GetMessage(); m != nil {
			present[m.Id] = true
		}
	}
	var add []*memoryv1.Message
	var tokens uint64
	for _, m := range msgs {
		if present[m.GetId()] {
			continue
		}
		present[m.GetId()] = true
		c := proto.CloneOf(m)
		datePromoted(c, env.Tokenizer)
		add = append(add, c)
		tokens += uint64(c.GetTokens())
	}
	if len(add) == 0 {
		return nil, nil
	}
	before := s.PlannedTokens()
	s.begin(false)
	defer s.rollback()
	ev := &memoryv1.MessagesPromoted{Messages: add}
	if err := s.applyEvent(ev, env.NowUnixNano); err != nil {
		return nil, fmt.Errorf("segmented: decided an inconsistent event: %w", err)
	}
	comp, err := compress(s, env)
	if err != nil {
		return nil, err
	}
	fit, err := s.fitView(env)
	if err != nil {
		return nil, err
	}
	comp = append(comp, fit...)
	what := func() string { return fmt.Sprintf("a promotion of %d tokens", tokens) }
	if err := checkBudget(s.Budget(), before, s.PlannedTokens(), "message_ids", what); err != nil {
		return nil, err
	}
	return append([]proto.Message{ev}, comp...), nil
}

// DecideClearPromoted empties the promoted layer and the recalled section
// (no event when both are empty).
func (s *State) DecideClearPromoted() ([]proto.Message, error) {
	if err := s.mutable("clear recalled"); err != nil {
		return nil, err
	}
	var out []proto.Message
	if len(s.snap.Promoted) > 0 {
		ids := make([]string, len(s.snap.Promoted))
		for i, m := range s.snap.Promoted {
			ids[i] = m.Id
		}
		out = append(out, &memoryv1.PromotedCleared{MessageIds: ids})
	}
	// The recalled section goes too; the memory section stays.
	if a := s.Assembled(); len(a.GetRecalled()) > 0 {
		kept := proto.Clone(a).(*memoryv1.Assembled)
		kept.Recalled = nil
		out = append(out, &memoryv1.ContextAssembled{Sections: kept})
	}
	return out, nil
}

// Promoted returns the promoted layer (shared: read-only).
func (s *State) Promoted() []*memoryv1.Message { return s.snap.GetPromoted() }

func (s *State) applyPromoted(e *memoryv1.MessagesPromoted) {
	s.snap.Promoted = append(s.snap.Promoted, e.Messages...) // in place: see txn
	for _, m := range e.Messages {
		s.tok.promoted += uint64(m.GetTokens())
		s.track(delta{d: 1, promo: m})
	}
}

func (s *State) applyPromotedCleared(e *memoryv1.PromotedCleared) {
	// Copy first: DeleteFunc changes the slice in place (see txn).
	s.snap.Promoted = slices.DeleteFunc(slices.Clone(s.snap.Promoted), func(m *memoryv1.Message) bool {
		if slices.Contains(e.MessageIds, m.Id) {
			s.tok.promoted -= uint64(m.GetTokens())
			s.track(delta{d: -1, promo: m})
			return true
		}
		return false
	})
	if len(s.snap.Promoted) == 0 {
		s.snap.Promoted = nil
	}
}
