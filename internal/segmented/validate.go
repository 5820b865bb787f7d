package segmented

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// scopeIDRule is a scope id's syntax (sharedmem.ScopeID).
var scopeIDRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Request limits.
const (
	MaxMessagesPerAppend = 64
	MaxContentBytes      = 256 << 10
	MaxIDLen             = 128
	MaxPatterns          = 64
)

// Config defaults (zero values in CreateSessionRequest take these;
// max_l2_tokens and summary_max_tokens default to at most a quarter of the
// budget).
const (
	DefaultMaxContextTokens     = 128000
	DefaultReservedOutputTokens = 4096
	DefaultMaxL2Tokens          = 5000
	DefaultSummaryMaxTokens     = 400
	// MinBudget is the smallest budget (max_context - reserved) accepted.
	MinBudget = 256
	// MinSummaryMaxTokens is the smallest summary_max_tokens accepted.
	MinSummaryMaxTokens = 16
)

// Profile names.
const (
	ProfileFill           = "fill"
	ProfileBalanced       = "balanced"
	ProfileDataIntensive  = "data_intensive"
	ProfileConversational = "conversational"
	ProfileCustom         = "custom"
)

// profiles are the built-in compression profiles. fill is the default: it
// compresses only when a command would not fit the budget (start_pct 100),
// and then only back under 90 %, so a conversation that fits is never
// compressed and the context keeps its detail until the budget needs the
// room. balanced, data_intensive and conversational keep the design's
// pressure levels (70/80/85 % for balanced) as the start and the target:
// they hold the usage near their summarize level, leaving the rest of the
// budget free (for promotions, for bursts) at the cost of detail.
var profiles = map[string]*memoryv1.CompressionProfile{
	ProfileFill:           {Name: ProfileFill, StartPct: 100, SummarizePct: 90, SummarizeBatch: 4, SummarizeMorePct: 94, SummarizeMoreBatch: 6, EvictPct: 97, EvictBatch: 8},
	ProfileBalanced:       {Name: ProfileBalanced, SummarizePct: 70, SummarizeBatch: 4, SummarizeMorePct: 80, SummarizeMoreBatch: 6, EvictPct: 85, EvictBatch: 8},
	ProfileDataIntensive:  {Name: ProfileDataIntensive, SummarizePct: 60, SummarizeBatch: 6, SummarizeMorePct: 70, SummarizeMoreBatch: 8, EvictPct: 80, EvictBatch: 10},
	ProfileConversational: {Name: ProfileConversational, SummarizePct: 75, SummarizeBatch: 4, SummarizeMorePct: 85, SummarizeMoreBatch: 6, EvictPct: 90, EvictBatch: 8},
}

// Profile returns (a copy of) a named built-in compression profile.
func Profile(name string) (*memoryv1.CompressionProfile, bool) {
	p, ok := profiles[name]
	if !ok {
		return nil, false
	}
	return proto.Clone(p).(*memoryv1.CompressionProfile), true
}

// ValidateProfile checks 0 < summarize < summarize_more < evict <= 100,
// start_pct 0 or in [summarize_pct, 100], and every batch >= 2.
func ValidateProfile(p *memoryv1.CompressionProfile) error {
	if p == nil {
		return badRequest("profile", "required")
	}
	if p.SummarizePct == 0 {
		return badRequest("summarize_pct", "must be > 0")
	}
	if p.SummarizeMorePct <= p.SummarizePct {
		return badRequest("summarize_more_pct", "must be > summarize_pct (%d), got %d", p.SummarizePct, p.SummarizeMorePct)
	}
	if p.EvictPct <= p.SummarizeMorePct {
		return badRequest("evict_pct", "must be > summarize_more_pct (%d), got %d", p.SummarizeMorePct, p.EvictPct)
	}
	if p.EvictPct > 100 {
		return badRequest("evict_pct", "must be <= 100, got %d", p.EvictPct)
	}
	if p.StartPct != 0 && (p.StartPct < p.SummarizePct || p.StartPct > 100) {
		return badRequest("start_pct", "must be 0 (start at summarize_pct) or in [summarize_pct (%d), 100], got %d", p.SummarizePct, p.StartPct)
	}
	for _, b := range []struct {
		field string
		v     uint32
	}{{"summarize_batch", p.SummarizeBatch}, {"summarize_more_batch", p.SummarizeMoreBatch}, {"evict_batch", p.EvictBatch}} {
		if b.v < 2 {
			return badRequest(b.field, "must be >= 2, got %d", b.v)
		}
	}
	return nil
}

// resolveConfig returns the session config a valid request asks for.
func resolveConfig(req *memoryv1.CreateSessionRequest) *memoryv1.SessionConfig {
	c := &memoryv1.SessionConfig{
		MaxContextTokens:     orDefault(req.GetMaxContextTokens(), DefaultMaxContextTokens),
		ReservedOutputTokens: orDefault(req.GetReservedOutputTokens(), DefaultReservedOutputTokens),
		MaxL2Tokens:          req.GetMaxL2Tokens(),
		SummaryMaxTokens:     req.GetSummaryMaxTokens(),
	}
	// The defaults, but at most a quarter of a small budget.
	if c.MaxL2Tokens == 0 {
		c.MaxL2Tokens = uint32(min(DefaultMaxL2Tokens, budgetOf(c)/4))
	}
	if c.SummaryMaxTokens == 0 {
		c.SummaryMaxTokens = uint32(min(DefaultSummaryMaxTokens, budgetOf(c)/4))
	}
	c.Assembly = resolveAssembly(req.GetAssembly())
	switch name := req.GetProfile(); name {
	case "":
		c.Profile, _ = Profile(ProfileFill)
	case ProfileCustom:
		c.Profile = proto.Clone(req.GetCustomProfile()).(*memoryv1.CompressionProfile)
		c.Profile.Name = ProfileCustom
	default:
		c.Profile, _ = Profile(name)
	}
	return c
}

func orDefault(v, d uint32) uint32 {
	if v == 0 {
		return d
	}
	return v
}

// ValidateCreate checks a CreateSessionRequest (400, or 413 for sizes).
func ValidateCreate(req *memoryv1.CreateSessionRequest) error {
	if req == nil {
		return badRequest("", "empty request")
	}
	for _, f := range []struct{ field, v string }{
		{"command_id", req.CommandId}, {"user_id", req.UserId}, {"app", req.App},
		{"project", req.Project}, {"agent_id", req.AgentId},
	} {
		if err := validateLabel(f.field, f.v); err != nil {
			return err
		}
	}
	if err := validateLibraries(req.PatternLibraries); err != nil {
		return err
	}
	if req.AgentType != "" && !scopeIDRule.MatchString(req.AgentType) {
		// The type names the scope agent_type:<type>, so it is a scope id.
		return badRequest("agent_type", "%q is not [A-Za-z0-9_-]{1,128}", req.AgentType)
	}
	switch req.Profile {
	case "", ProfileFill, ProfileBalanced, ProfileDataIntensive, ProfileConversational:
		if req.CustomProfile != nil {
			return badRequest("custom_profile", "only allowed with profile %q", ProfileCustom)
		}
	case ProfileCustom:
		if req.CustomProfile == nil {
			return badRequest("custom_profile", "required with profile %q", ProfileCustom)
		}
		if err := ValidateProfile(req.CustomProfile); err != nil {
			r := err.(*Rejection)
			r.Field = "custom_profile." + r.Field
			return r
		}
	default:
		return badRequest("profile", "unknown profile %q (fill, balanced, data_intensive, conversational, custom)", req.Profile)
	}
	c := resolveConfig(req)
	if c.ReservedOutputTokens >= c.MaxContextTokens {
		if req.GetReservedOutputTokens() == 0 {
			// The default surprises a small max_context_tokens: say so.
			hint := fmt.Sprintf("send max_context_tokens >= %d", DefaultReservedOutputTokens+MinBudget)
			if c.MaxContextTokens > MinBudget {
				hint = fmt.Sprintf("send reserved_output_tokens <= %d, or max_context_tokens >= %d", c.MaxContextTokens-MinBudget, DefaultReservedOutputTokens+MinBudget)
			}
			return badRequest("reserved_output_tokens", "unset, so it is the default %d, not below max_context_tokens (%d); the budget is max_context_tokens - reserved_output_tokens and must be >= %d: %s",
				DefaultReservedOutputTokens, c.MaxContextTokens, MinBudget, hint)
		}
		return badRequest("reserved_output_tokens", "must be < max_context_tokens (%d), got %d", c.MaxContextTokens, c.ReservedOutputTokens)
	}
	budget := budgetOf(c)
	if budget < MinBudget {
		return badRequest("max_context_tokens", "budget (max_context_tokens - reserved_output_tokens) must be >= %d, got %d", MinBudget, budget)
	}
	if c.SummaryMaxTokens < MinSummaryMaxTokens || uint64(c.SummaryMaxTokens)*4 > budget {
		return badRequest("summary_max_tokens", "must be in [%d, budget/4 = %d], got %d", MinSummaryMaxTokens, budget/4, c.SummaryMaxTokens)
	}
	if err := validateAssembly(req.GetAssembly()); err != nil {
		return err
	}
	if err := validateText("system_prompt", req.SystemPrompt); err != nil {
		return err
	}
	if len(req.Patterns) > MaxPatterns {
		return reject(CodeTooLarge, "patterns", "at most %d patterns, got %d", MaxPatterns, len(req.Patterns))
	}
	for i, p := range req.Patterns {
		if err := validateText(fmt.Sprintf("patterns[%d]", i), p); err != nil {
			return err
		}
	}
	return validateText("backend_schema", req.BackendSchema)
}

// ValidateAppend checks an AppendRequest on its own (the state-dependent
// checks — unique ids, open tool calls — are in DecideAppend).
func ValidateAppend(req *memoryv1.AppendRequest) error {
	if req == nil {
		return badRequest("", "empty request")
	}
	if err := validateLabel("command_id", req.CommandId); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return badRequest("messages", "at least one message required")
	}
	if len(req.Messages) > MaxMessagesPerAppend {
		return reject(CodeTooLarge, "messages", "at most %d messages per append, got %d", MaxMessagesPerAppend, len(req.Messages))
	}
	ids := map[string]int{}
	calls := map[string]string{}
	for i, m := range req.Messages {
		f := fmt.Sprintf("messages[%d]", i)
		if m.Id != "" {
			if err := validateID(f+".id", m.Id); err != nil {
				return err
			}
			if isAssignedID(m.Id) {
				return badRequest(f+".id", "%q is reserved for server-assigned ids (m<seq>)", m.Id)
			}
			if j, dup := ids[m.Id]; dup {
				return badRequest(f+".id", "duplicate of messages[%d].id", j)
			}
			ids[m.Id] = i
		}
		if err := validateText(f+".content", m.Content); err != nil {
			return err
		}
		if err := validateLabel(f+".name", m.Name); err != nil {
			return err
		}
		switch m.Role {
		case memoryv1.Role_ROLE_USER, memoryv1.Role_ROLE_SYSTEM:
			if strings.TrimSpace(m.Content) == "" {
				return badRequest(f+".content", "empty")
			}
		case memoryv1.Role_ROLE_ASSISTANT:
			if strings.TrimSpace(m.Content) == "" && len(m.ToolCalls) == 0 {
				return badRequest(f+".content", "empty (and no tool_calls)")
			}
		case memoryv1.Role_ROLE_TOOL:
			if m.ToolCallId == "" {
				return badRequest(f+".tool_call_id", "required for a tool message")
			}
			if err := validateID(f+".tool_call_id", m.ToolCallId); err != nil {
				return err
			}
		default:
			return badRequest(f+".role", "must be user, assistant, tool or system, got %v", m.Role)
		}
		if m.SaidUnixNano < 0 {
			return badRequest(f+".said_unix_nano", "must not be negative, got %d", m.SaidUnixNano)
		}
		if m.Role != memoryv1.Role_ROLE_TOOL && m.ToolCallId != "" {
			return badRequest(f+".tool_call_id", "only allowed on a tool message")
		}
		if m.Role != memoryv1.Role_ROLE_ASSISTANT && len(m.ToolCalls) > 0 {
			return badRequest(f+".tool_calls", "only allowed on an assistant message")
		}
		size := len(m.Content)
		for j, c := range m.ToolCalls {
			cf := fmt.Sprintf("%s.tool_calls[%d]", f, j)
			if c.GetId() == "" {
				return badRequest(cf+".id", "required")
			}
			if err := validateID(cf+".id", c.Id); err != nil {
				return err
			}
			if prev, dup := calls[c.Id]; dup {
				return badRequest(cf+".id", "duplicate of %s.id", prev)
			}
			calls[c.Id] = cf
			if c.Name == "" {
				return badRequest(cf+".name", "required")
			}
			if err := validateLabel(cf+".name", c.Name); err != nil {
				return err
			}
			if err := validateText(cf+".arguments", c.Arguments); err != nil {
				return err
			}
			size += len(c.Arguments)
		}
		if size > MaxContentBytes {
			return reject(CodeTooLarge, f, "content and tool call arguments are %d bytes, limit %d", size, MaxContentBytes)
		}
	}
	return nil
}

// ValidateStateKey checks "temp:<name>" or "session:<name>", with name of
// 1..128 characters in [A-Za-z0-9_.:-].
func ValidateStateKey(key string) error {
	name, ok := strings.CutPrefix(key, "session:")
	if !ok {
		name, ok = strings.CutPrefix(key, "temp:")
	}
	if !ok {
		return badRequest("key", "must start with \"session:\" or \"temp:\", got %q", truncate(key, 40))
	}
	if name == "" || len(name) > MaxIDLen {
		return badRequest("key", "name must be 1..%d characters, got %d", MaxIDLen, len(name))
	}
	for _, r := range name {
		if !isIDRune(r) && r != '.' && r != ':' {
			return badRequest("key", "name may only contain [A-Za-z0-9_.:-], got %q", r)
		}
	}
	return nil
}

// ValidateSessionID checks a session id: [A-Za-z0-9_-]{1,128}.
func ValidateSessionID(id string) error {
	if id == "" {
		return badRequest("session_id", "required")
	}
	return validateID("session_id", id)
}

func validateID(field, id string) error {
	if len(id) > MaxIDLen {
		return badRequest(field, "longer than %d characters", MaxIDLen)
	}
	for _, r := range id {
		if !isIDRune(r) {
			return badRequest(field, "may only contain [A-Za-z0-9_-], got %q", r)
		}
	}
	return nil
}

// validateLabel checks a free-form short string (names, command ids).
func validateLabel(field, v string) error {
	if len(v) > MaxIDLen {
		return badRequest(field, "longer than %d bytes", MaxIDLen)
	}
	if !utf8.ValidString(v) {
		return badRequest(field, "not valid UTF-8")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return badRequest(field, "contains a control character")
		}
	}
	return nil
}

func validateText(field, v string) error {
	if len(v) > MaxContentBytes {
		return reject(CodeTooLarge, field, "%d bytes, limit %d", len(v), MaxContentBytes)
	}
	if !utf8.ValidString(v) {
		return badRequest(field, "not valid UTF-8")
	}
	return nil
}

func validateJSON(field, v string) error {
	if err := validateText(field, v); err != nil {
		return err
	}
	if v != "" && !json.Valid([]byte(v)) {
		return badRequest(field, "not valid JSON")
	}
	return nil
}

func isIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// isAssignedID reports whether id has the form the server assigns: m<digits>.
func isAssignedID(id string) bool {
	if len(id) < 2 || id[0] != 'm' {
		return false
	}
	for _, c := range id[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return utf8cut.Prefix(s, n) + "…"
}
