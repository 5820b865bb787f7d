package segmented

import (
	"slices"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// MaxPromote bounds the messages of one promote command.
const MaxPromote = 50

// DecidePromote copies messages recalled from swap (as stored, token counts
// included) into the promoted layer. Messages already verbatim in L1 or
// already promoted are skipped. The promotion must fit what is free of the
// budget now (budget − tokens in use, a pending ROM counted at its size):
// otherwise 413 says how many tokens are free. Nothing is double-counted:
// promoted tokens are counted once, in the promoted layer.
func (s *State) DecidePromote(msgs []*memoryv1.Message) ([]proto.Message, error) {
	if err := s.mutable("promote"); err != nil {
		return nil, err
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
		add = append(add, proto.Clone(m).(*memoryv1.Message))
		tokens += uint64(m.GetTokens())
	}
	if len(add) == 0 {
		return nil, nil
	}
	budget, used := s.Budget(), s.PlannedTokens()
	free := uint64(0)
	if budget > used {
		free = budget - used
	}
	if tokens > free {
		return nil, reject(CodeTooLarge, "message_ids", "promotion needs %d tokens, %d of %d are free", tokens, free, budget)
	}
	return []proto.Message{&memoryv1.MessagesPromoted{Messages: add}}, nil
}

// DecideClearPromoted empties the promoted layer (no event when it is empty).
func (s *State) DecideClearPromoted() ([]proto.Message, error) {
	if err := s.mutable("clear recalled"); err != nil {
		return nil, err
	}
	if len(s.snap.Promoted) == 0 {
		return nil, nil
	}
	ids := make([]string, len(s.snap.Promoted))
	for i, m := range s.snap.Promoted {
		ids[i] = m.Id
	}
	return []proto.Message{&memoryv1.PromotedCleared{MessageIds: ids}}, nil
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
