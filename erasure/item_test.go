package erasure

import (
	"errors"
	"testing"

	"github.com/agentmem/agentmem/internal/sharedmem"
)

// TestItemSpelling: each kind of item is spelled as the ledgers already
// written spell it (LogRemoval.planned, erased, rewritten), and read back.
func TestItemSpelling(t *testing.T) {
	for _, tc := range []struct {
		it   Item
		want string
	}{
		{SessionItem("s1"), "session.s1"},
		{ScopeItem(sharedmem.KindSession, "s1"), "session_scope.s1"},
		{ScopeItem(sharedmem.KindUser, "u1"), "user.u1"},
		{ScopeItem(sharedmem.KindAgent, "a-1"), "agent.a-1"},
		{DataItem("d_9"), "data.d_9"},
		{EntryItem(sharedmem.KindUser, "u1", "diet"), "entry:user:u1:diet"},
		{EntryItem(sharedmem.KindProject, "p1", "a:b/c.d"), "entry:project:p1:a:b/c.d"},
		{EntryItem(sharedmem.KindSession, "s1", "draft"), "entry:session:s1:draft"},
	} {
		if got := tc.it.String(); got != tc.want {
			t.Errorf("%+v spelled %q, want %q", tc.it, got, tc.want)
		}
		back, err := ParseItem(tc.want)
		if err != nil || back != tc.it {
			t.Errorf("ParseItem(%q) = %+v, %v; want %+v", tc.want, back, err, tc.it)
		}
	}
}

func TestParseItemRefuses(t *testing.T) {
	for _, s := range []string{
		"", "session", "session.", ".s1", "session.s1.x", "moon.x", "session_scope", "removal.r1",
		"entry:", "entry:user", "entry:user:u1", "entry:user::k", "entry:user:u1:", "entry:moon:x:k", "entry::x:k",
	} {
		if it, err := ParseItem(s); !errors.Is(err, ErrBadItem) {
			t.Errorf("ParseItem(%q) = %+v, %v; want ErrBadItem", s, it, err)
		}
	}
}

func TestTargetSpelling(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{SessionTarget("s1"), "session:s1"},
		{UserTarget("u1"), "user:u1"},
		{ScopeTarget(sharedmem.KindUser, "u1"), "scope:user:u1"},
		{ScopeTarget(sharedmem.KindAgent, "a1"), "scope:agent:a1"},
		{EntryTarget(sharedmem.KindProject, "p1", "k"), "entry:project:p1:k"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%+v spelled %q, want %q", tc.t, got, tc.want)
		}
	}
	// A user erase and an erase of the user's scope alone are different
	// requests: one command id names two removals.
	if RequestID(UserTarget("u1"), "p", "c1") == RequestID(ScopeTarget(sharedmem.KindUser, "u1"), "p", "c1") {
		t.Error("a user erase and a user-scope erase share a removal id")
	}
	if RequestID(UserTarget("u1"), "p", "") != "" {
		t.Error("a request without a command id has a derived id")
	}
}

// FuzzParseItem: whatever ParseItem accepts, String spells back the same.
func FuzzParseItem(f *testing.F) {
	for _, s := range []string{"session.s1", "session_scope.s1", "user.u1", "data.d", "entry:user:u1:diet", "entry:agent:a:x:y", "agent.", "x.y.z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it, err := ParseItem(s)
		if err != nil {
			return
		}
		if got := it.String(); got != s {
			t.Fatalf("ParseItem(%q) = %+v, spelled back %q", s, it, got)
		}
	})
}
