package segmented

import (
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// Short names for the statuses.
const (
	statusCreated    = memoryv1.SessionStatus_SESSION_STATUS_CREATED
	statusActive     = memoryv1.SessionStatus_SESSION_STATUS_ACTIVE
	statusPaused     = memoryv1.SessionStatus_SESSION_STATUS_PAUSED
	statusTerminated = memoryv1.SessionStatus_SESSION_STATUS_TERMINATED
	statusArchived   = memoryv1.SessionStatus_SESSION_STATUS_ARCHIVED
)

func statusName(st memoryv1.SessionStatus) string {
	return strings.TrimPrefix(st.String(), "SESSION_STATUS_")
}

// requireStatus returns 404 when there is no session and 409 when its status
// is not one of allowed.
func (s *State) requireStatus(what string, allowed ...memoryv1.SessionStatus) error {
	if s.snap == nil {
		return reject(CodeNotFound, "session_id", "session does not exist")
	}
	if !slices.Contains(allowed, s.snap.Status) {
		return reject(CodeConflict, "status", "cannot %s: session is %s", what, statusName(s.snap.Status))
	}
	return nil
}

// DecideCreate decides a CreateSessionRequest: one SessionCreated event with
// the resolved config (defaults, profile) and the ROM (version 1, tokens
// counted). 409 when the session exists; 413 when the ROM alone exceeds the
// budget.
func (s *State) DecideCreate(req *memoryv1.CreateSessionRequest, sessionID string, env Env) ([]proto.Message, error) {
	if err := ValidateSessionID(sessionID); err != nil {
		return nil, err
	}
	if err := ValidateCreate(req); err != nil {
		return nil, err
	}
	if s.snap != nil {
		return nil, reject(CodeConflict, "session_id", "session %q already exists", sessionID)
	}
	if env.Tokenizer == nil {
		return nil, errNoTokenizer
	}
	cfg := resolveConfig(req)
	rom := &memoryv1.Rom{
		Version:       1,
		SystemPrompt:  req.SystemPrompt,
		Patterns:      slices.Clone(req.Patterns),
		BackendSchema: req.BackendSchema,
	}
	rom.Tokens = romTokenCount(env.Tokenizer, rom)
	if len(req.PatternLibraries) > 0 {
		libs, err := readLibraries(env, req.App, req.PatternLibraries)
		if err != nil {
			return nil, err
		}
		rom = withLibraries(rom, req.Patterns, libs, env.Tokenizer)
	}
	if budget := budgetOf(cfg); uint64(rom.Tokens) > budget {
		return nil, reject(CodeTooLarge, "system_prompt", "the ROM needs %d tokens, the budget is %d", rom.Tokens, budget)
	}
	return []proto.Message{&memoryv1.SessionCreated{
		SessionId: sessionID,
		UserId:    req.UserId,
		App:       req.App,
		Project:   req.Project,
		AgentId:   req.AgentId,
		Config:    cfg,
		Rom:       rom,
		AgentType: req.AgentType,
		DayMarks:  DayMarksAfterOtherDays,
	}}, nil
}

// transitions: action -> (allowed from, to).
var transitions = map[memoryv1.StatusAction]struct {
	from []memoryv1.SessionStatus
	to   memoryv1.SessionStatus
}{
	memoryv1.StatusAction_STATUS_ACTION_PAUSE:     {[]memoryv1.SessionStatus{statusActive}, statusPaused},
	memoryv1.StatusAction_STATUS_ACTION_RESUME:    {[]memoryv1.SessionStatus{statusPaused}, statusActive},
	memoryv1.StatusAction_STATUS_ACTION_TERMINATE: {[]memoryv1.SessionStatus{statusCreated, statusActive, statusPaused}, statusTerminated},
	memoryv1.StatusAction_STATUS_ACTION_ARCHIVE:   {[]memoryv1.SessionStatus{statusTerminated}, statusArchived},
}

// DecideStatus decides a lifecycle change: CREATED -> ACTIVE (first
// append) -> (PAUSED <-> ACTIVE)* -> TERMINATED -> ARCHIVED. Terminate
// also clears the "session:" keys (SessionStateCleared). An invalid
// transition is 409 naming from and to.
func (s *State) DecideStatus(req *memoryv1.StatusRequest) ([]proto.Message, error) {
	if req == nil {
		return nil, badRequest("", "empty request")
	}
	if err := validateLabel("command_id", req.CommandId); err != nil {
		return nil, err
	}
	if err := validateLabel("reason", truncate(req.Reason, MaxIDLen)); err != nil {
		return nil, err
	}
	t, ok := transitions[req.Action]
	if !ok {
		return nil, badRequest("action", "must be pause, resume, terminate or archive, got %v", req.Action)
	}
	if s.snap == nil {
		return nil, reject(CodeNotFound, "session_id", "session does not exist")
	}
	from := s.snap.Status
	if !slices.Contains(t.from, from) {
		return nil, reject(CodeConflict, "action", "invalid transition from %s to %s", statusName(from), statusName(t.to))
	}
	out := []proto.Message{&memoryv1.SessionStatusChanged{From: from, To: t.to, Reason: req.Reason}}
	if t.to == statusTerminated {
		keys := make([]string, 0, len(s.snap.SessionState))
		for _, e := range s.snap.SessionState {
			keys = append(keys, e.Key)
		}
		out = append(out, &memoryv1.SessionStateCleared{Keys: keys})
	}
	return out, nil
}

// mutable is the status check of every mutation other than append and
// status changes: refused (409) once TERMINATED or ARCHIVED.
func (s *State) mutable(what string) error {
	return s.requireStatus(what, statusCreated, statusActive, statusPaused)
}

// DecideStateSet sets a "session:" key ("temp:" keys never reach the log).
func (s *State) DecideStateSet(key string, value []byte) ([]proto.Message, error) {
	if err := validateSessionKey(key); err != nil {
		return nil, err
	}
	if len(value) > MaxContentBytes {
		return nil, reject(CodeTooLarge, "value", "%d bytes, limit %d", len(value), MaxContentBytes)
	}
	if err := s.mutable("set state"); err != nil {
		return nil, err
	}
	return []proto.Message{&memoryv1.SessionStateSet{Key: key, Value: slices.Clone(value)}}, nil
}

// DecideStateDelete deletes a "session:" key (404 when absent).
func (s *State) DecideStateDelete(key string) ([]proto.Message, error) {
	if err := validateSessionKey(key); err != nil {
		return nil, err
	}
	if err := s.mutable("delete state"); err != nil {
		return nil, err
	}
	if _, ok := s.StateValue(key); !ok {
		return nil, reject(CodeNotFound, "key", "%q is not set", key)
	}
	return []proto.Message{&memoryv1.SessionStateDeleted{Key: key}}, nil
}

func validateSessionKey(key string) error {
	if err := ValidateStateKey(key); err != nil {
		return err
	}
	if !strings.HasPrefix(key, "session:") {
		return badRequest("key", "only \"session:\" keys are stored in the session")
	}
	return nil
}

// DecideReplaceSummary records a better text for a summary, computed beside
// the actor (an LLM). 409 when the summary no longer exists (compressed
// again, evicted and archived) or when the new text has more tokens than
// the old one, so the budget still holds.
func (s *State) DecideReplaceSummary(summaryID, text, source string, env Env) ([]proto.Message, error) {
	if summaryID == "" {
		return nil, badRequest("summary_id", "required")
	}
	if strings.TrimSpace(text) == "" {
		return nil, badRequest("text", "empty")
	}
	if err := validateText("text", text); err != nil {
		return nil, err
	}
	if source == "" {
		source = SourceLLM
	}
	if err := validateLabel("source", source); err != nil {
		return nil, err
	}
	if err := s.requireStatus("replace a summary", statusCreated, statusActive, statusPaused, statusTerminated); err != nil {
		return nil, err
	}
	if env.Tokenizer == nil {
		return nil, errNoTokenizer
	}
	old := s.findSummary(summaryID)
	if old == nil {
		return nil, reject(CodeConflict, "summary_id", "summary %q no longer exists", summaryID)
	}
	tokens := textTokens(env.Tokenizer, text)
	if tokens > old.Tokens {
		return nil, reject(CodeConflict, "text", "the new summary has %d tokens, more than the %d it replaces", tokens, old.Tokens)
	}
	return []proto.Message{&memoryv1.SummaryReplaced{SummaryId: summaryID, Text: text, Tokens: tokens, Source: source}}, nil
}

func (s *State) findSummary(id string) *memoryv1.Summary {
	for _, sum := range s.snap.GetL2() {
		if sum.Id == id {
			return sum
		}
	}
	for _, e := range s.snap.GetL1() {
		if sum := e.GetSummary(); sum != nil && sum.Id == id {
			return sum
		}
	}
	return nil
}
