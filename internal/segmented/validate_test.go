package segmented

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestValidateAppend(t *testing.T) {
	big := strings.Repeat("x", MaxContentBytes+1)
	many := make([]*memoryv1.MessageInput, MaxMessagesPerAppend+1)
	for i := range many {
		many[i] = user("hi")
	}
	tests := []struct {
		name  string
		msgs  []*memoryv1.MessageInput
		code  int
		field string
	}{
		{"ok", []*memoryv1.MessageInput{user("hi"), assistant("", call("c1", "search")), toolResult("c1", "r")}, 0, ""},
		{"empty", nil, 400, "messages"},
		{"too many", many, 413, "messages"},
		{"no role", []*memoryv1.MessageInput{{Content: "x"}}, 400, "messages[0].role"},
		{"said before 1970", []*memoryv1.MessageInput{user("hi"), {Role: memoryv1.Role_ROLE_USER, Content: "x", SaidUnixNano: -1}}, 400, "messages[1].said_unix_nano"},
		{"empty user", []*memoryv1.MessageInput{user("hi"), user("  ")}, 400, "messages[1].content"},
		{"huge content", []*memoryv1.MessageInput{user(big)}, 413, "messages[0].content"},
		{"bad utf8", []*memoryv1.MessageInput{user("a\xffb")}, 400, "messages[0].content"},
		{"bad id", []*memoryv1.MessageInput{{Id: "a.b", Role: memoryv1.Role_ROLE_USER, Content: "x"}}, 400, "messages[0].id"},
		{"reserved id", []*memoryv1.MessageInput{{Id: "m12", Role: memoryv1.Role_ROLE_USER, Content: "x"}}, 400, "messages[0].id"},
		{"dup id", []*memoryv1.MessageInput{{Id: "a", Role: memoryv1.Role_ROLE_USER, Content: "x"}, {Id: "a", Role: memoryv1.Role_ROLE_USER, Content: "y"}}, 400, "messages[1].id"},
		{"tool without call id", []*memoryv1.MessageInput{user("hi"), {Role: memoryv1.Role_ROLE_TOOL, Content: "r"}}, 400, "messages[1].tool_call_id"},
		{"call id on user", []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: "x", ToolCallId: "c"}}, 400, "messages[0].tool_call_id"},
		{"tool calls on user", []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: "x", ToolCalls: []*memoryv1.ToolCall{call("c", "f")}}}, 400, "messages[0].tool_calls"},
		{"call without id", []*memoryv1.MessageInput{assistant("", &memoryv1.ToolCall{Name: "f"})}, 400, "messages[0].tool_calls[0].id"},
		{"call without name", []*memoryv1.MessageInput{assistant("", &memoryv1.ToolCall{Id: "c"})}, 400, "messages[0].tool_calls[0].name"},
		{"dup call id", []*memoryv1.MessageInput{assistant("", call("c", "f"), call("c", "g"))}, 400, "messages[0].tool_calls[1].id"},
		{"empty assistant", []*memoryv1.MessageInput{assistant("")}, 400, "messages[0].content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateAppend(&memoryv1.AppendRequest{Messages: tc.msgs})
			checkRejection(t, err, tc.code, tc.field)
		})
	}
}

func checkRejection(t *testing.T, err error, code int, field string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	r := rejection(err)
	if r == nil {
		t.Fatalf("want %d %s, got %v", code, field, err)
	}
	if r.Code != code || r.Field != field {
		t.Fatalf("want %d %s, got %d %s (%v)", code, field, r.Code, r.Field, r)
	}
	if !strings.HasPrefix(r.Error(), field+": ") {
		t.Fatalf("Error() = %q, want the field first", r.Error())
	}
}

func TestValidateCreate(t *testing.T) {
	custom := &memoryv1.CompressionProfile{SummarizePct: 50, SummarizeBatch: 2, SummarizeMorePct: 60, SummarizeMoreBatch: 3, EvictPct: 70, EvictBatch: 4}
	tests := []struct {
		name  string
		req   *memoryv1.CreateSessionRequest
		code  int
		field string
	}{
		{"defaults", &memoryv1.CreateSessionRequest{}, 0, ""},
		{"custom", &memoryv1.CreateSessionRequest{Profile: "custom", CustomProfile: custom}, 0, ""},
		{"unknown profile", &memoryv1.CreateSessionRequest{Profile: "fast"}, 400, "profile"},
		{"custom missing", &memoryv1.CreateSessionRequest{Profile: "custom"}, 400, "custom_profile"},
		{"custom with named", &memoryv1.CreateSessionRequest{Profile: "balanced", CustomProfile: custom}, 400, "custom_profile"},
		{"custom invalid", &memoryv1.CreateSessionRequest{Profile: "custom", CustomProfile: &memoryv1.CompressionProfile{SummarizePct: 50}}, 400, "custom_profile.summarize_more_pct"},
		{"reserved too big", &memoryv1.CreateSessionRequest{MaxContextTokens: 4000}, 400, "reserved_output_tokens"},
		{"budget too small", &memoryv1.CreateSessionRequest{MaxContextTokens: 300, ReservedOutputTokens: 100}, 400, "max_context_tokens"},
		{"summary too big", &memoryv1.CreateSessionRequest{MaxContextTokens: 2000, ReservedOutputTokens: 100, SummaryMaxTokens: 1000}, 400, "summary_max_tokens"},
		{"user id control", &memoryv1.CreateSessionRequest{UserId: "a\nb"}, 400, "user_id"},
		{"huge prompt", &memoryv1.CreateSessionRequest{SystemPrompt: strings.Repeat("x", MaxContentBytes+1)}, 413, "system_prompt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRejection(t, ValidateCreate(tc.req), tc.code, tc.field)
		})
	}
	_, err := New().DecideCreate(&memoryv1.CreateSessionRequest{}, "bad.id", testEnv(t))
	checkRejection(t, err, 400, "session_id")
}

func TestValidateProfile(t *testing.T) {
	for _, name := range []string{ProfileBalanced, ProfileDataIntensive, ProfileConversational} {
		p, ok := Profile(name)
		if !ok || p.Name != name {
			t.Fatalf("Profile(%q) = %v, %v", name, p, ok)
		}
		if err := ValidateProfile(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if p, _ := Profile(ProfileBalanced); p.SummarizePct != 70 || p.SummarizeBatch != 4 || p.SummarizeMorePct != 80 ||
		p.SummarizeMoreBatch != 6 || p.EvictPct != 85 || p.EvictBatch != 8 {
		t.Fatalf("balanced = %v", p)
	}
	if _, ok := Profile("nope"); ok {
		t.Fatal("unknown profile found")
	}
	ok := func() *memoryv1.CompressionProfile {
		return &memoryv1.CompressionProfile{SummarizePct: 50, SummarizeBatch: 2, SummarizeMorePct: 60, SummarizeMoreBatch: 2, EvictPct: 100, EvictBatch: 2}
	}
	tests := []struct {
		name  string
		edit  func(p *memoryv1.CompressionProfile)
		field string
	}{
		{"valid", func(*memoryv1.CompressionProfile) {}, ""},
		{"zero summarize", func(p *memoryv1.CompressionProfile) { p.SummarizePct = 0 }, "summarize_pct"},
		{"more not above", func(p *memoryv1.CompressionProfile) { p.SummarizeMorePct = 50 }, "summarize_more_pct"},
		{"evict not above", func(p *memoryv1.CompressionProfile) { p.EvictPct = 60 }, "evict_pct"},
		{"evict over 100", func(p *memoryv1.CompressionProfile) { p.EvictPct = 101 }, "evict_pct"},
		{"batch 1", func(p *memoryv1.CompressionProfile) { p.SummarizeBatch = 1 }, "summarize_batch"},
		{"more batch 0", func(p *memoryv1.CompressionProfile) { p.SummarizeMoreBatch = 0 }, "summarize_more_batch"},
		{"evict batch 1", func(p *memoryv1.CompressionProfile) { p.EvictBatch = 1 }, "evict_batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ok()
			tc.edit(p)
			code := 0
			if tc.field != "" {
				code = 400
			}
			checkRejection(t, ValidateProfile(p), code, tc.field)
		})
	}
}

func TestValidateStateKey(t *testing.T) {
	for key, valid := range map[string]bool{
		"session:a":                           true,
		"temp:x.y:z-1_2":                      true,
		"session:":                            false,
		"user:a":                              false,
		"session:a b":                         false,
		"session:" + strings.Repeat("a", 128): true,
		"session:" + strings.Repeat("a", 129): false,
	} {
		err := ValidateStateKey(key)
		if (err == nil) != valid {
			t.Errorf("ValidateStateKey(%q) = %v, want valid=%v", key, err, valid)
		}
		if err != nil && rejection(err).Field != "key" {
			t.Errorf("field = %q", rejection(err).Field)
		}
	}
}
