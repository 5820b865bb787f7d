package segmented

import (
	"errors"
	"fmt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// DecideAppendLater decides an AppendRequest as DecideAppendWith does, but
// leaves the assembled sections as they are: the sections of its latest
// user message are decided by a later command (DecideAssemble), once the
// node has searched for their candidates. The append is then stored and
// answered without waiting for the searches. later is the id of the user
// message whose sections are to come ("" when the append holds none or the
// session does not assemble its context).
func (s *State) DecideAppendLater(req *memoryv1.AppendRequest, env Env) (evs []proto.Message, later string, err error) {
	if err := ValidateAppend(req); err != nil {
		return nil, "", err
	}
	if err := s.requireStatus("append", memoryv1.SessionStatus_SESSION_STATUS_CREATED, memoryv1.SessionStatus_SESSION_STATUS_ACTIVE); err != nil {
		return nil, "", err
	}
	if env.Tokenizer == nil {
		return nil, "", errNoTokenizer
	}
	evs, err = s.decideAppend(req, nil, sectionsLater, env)
	var rej *Rejection
	if errors.As(err, &rej) && rej.Code == CodeTooLarge && s.Assembled() != nil {
		// The earlier sections leave no room for the append: cleared, as
		// DecideAppendWith clears them; the later command chooses again.
		evs, err = s.decideAppend(req, nil, sectionsClear, env)
	}
	if err != nil || !s.WantsCandidates(req) {
		return evs, "", err
	}
	for _, ev := range evs {
		if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
			for _, m := range ma.GetMessages() {
				if m.GetRole() == memoryv1.Role_ROLE_USER {
					later = m.GetId()
				}
			}
		}
	}
	return evs, later, nil
}

// DecideAssemble decides the sections of the session's latest user
// message, messageID, from c: a ContextAssembled (and the plan's trim
// when the context would not fit), as DecideAppendWith would have put in
// that message's append batch. Nothing is decided (no events, no error)
// when messageID is no longer the session's latest user message or no
// longer in L1 verbatim (a later user message decides its own sections),
// or when the sections do not change. The session's own messages count as
// hits from before the append that stored the message (planner.searchable:
// the node waits until the projection holds them). When the budget cannot
// hold the sections, they are cleared. It leaves s unchanged.
func (s *State) DecideAssemble(messageID string, c *Candidates, env Env) ([]proto.Message, error) {
	if err := s.requireStatus("assemble", memoryv1.SessionStatus_SESSION_STATUS_ACTIVE); err != nil {
		return nil, err
	}
	if env.Tokenizer == nil {
		return nil, errNoTokenizer
	}
	latest := s.latestUser()
	if latest == nil || latest.GetId() != messageID {
		return nil, nil
	}
	out, err := s.decideAssemble(latest, c, sectionsChoose, env)
	var rej *Rejection
	if errors.As(err, &rej) && rej.Code == CodeTooLarge {
		return s.decideAssemble(latest, nil, sectionsClear, env)
	}
	return out, err
}

func (s *State) decideAssemble(latest *memoryv1.Message, c *Candidates, mode sectionsMode, env Env) ([]proto.Message, error) {
	// Hits of the session's own messages count from before the append
	// that stored latest (the node waited for the projection up to it):
	// the last append's first message, or latest when appends followed.
	s.prevAppendFirst = s.snap.GetLastAppendFirstSeq()
	if b := latest.GetSeq(); s.prevAppendFirst == 0 || s.prevAppendFirst > b {
		s.prevAppendFirst = b
	}
	before := s.PlannedTokens()
	s.begin(false)
	defer s.rollback()
	var out []proto.Message
	appended := &memoryv1.MessagesAppended{Messages: []*memoryv1.Message{latest}}
	if ev := s.assembleEvent(appended, c, mode, env); ev != nil {
		if err := s.applyEvent(ev, env.NowUnixNano); err != nil {
			return nil, fmt.Errorf("segmented: decided an inconsistent event: %w", err)
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		return nil, nil
	}
	fit, err := s.fitView(env)
	if err != nil {
		return nil, err
	}
	out = append(out, fit...)
	if err := checkBudget(s.Budget(), before, s.PlannedTokens(), "assembly", func() string { return "the assembled sections" }); err != nil {
		return nil, err
	}
	return out, nil
}

// latestUser returns the session's latest user message when it is in L1
// verbatim (nil otherwise).
func (s *State) latestUser() *memoryv1.Message {
	l1 := s.snap.GetL1()
	for i := len(l1) - 1; i >= 0; i-- {
		m := l1[i].GetMessage()
		if m == nil {
			return nil // a summary: the latest user message is older still
		}
		if m.GetRole() == memoryv1.Role_ROLE_USER {
			return m
		}
	}
	return nil
}
