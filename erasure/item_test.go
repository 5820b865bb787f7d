package erasure

import (
	"errors"
	"strings"
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
		{EntryItem(sharedmem.KindUser, "u1", "diet"), "entry:user:u1:#" + sha("diet")},
		{EntryItem(sharedmem.KindProject, "p1", "a:b/c.d"), "entry:project:p1:#" + sha("a:b/c.d")},
		{EntryItem(sharedmem.KindSession, "s1", "draft"), "entry:session:s1:#" + sha("draft")},
	} {
		if got := tc.it.String(); got != tc.want {
			t.Errorf("%+v spelled %q, want %q", tc.it, got, tc.want)
		}
		back, err := ParseItem(tc.want)
		want := tc.it
		want.Key = "" // a plan holds no key
		if err != nil || back != want {
			t.Errorf("ParseItem(%q) = %+v, %v; want %+v", tc.want, back, err, want)
		}
	}
	// A plan written before spelled an entry's key: read, key and all.
	for _, old := range []string{"entry:user:u1:diet", "entry:project:p1:a:b/c.d"} {
		it, err := ParseItem(old)
		if err != nil || it.Key == "" || it.KeySum != sha(it.Key) || "entry:"+string(it.Scope)+":"+it.ID+":"+it.Key != old {
			t.Errorf("ParseItem(%q) = %+v, %v", old, it, err)
		}
	}
}

func sha(s string) string { return keySum(s) }

// TestEntryKeyNotInTheLedger: what the ledger records of an entry item or
// target never holds the key.
func TestEntryKeyNotInTheLedger(t *testing.T) {
	const key = "episode/user/tried/calling_my_sister_maria"
	for _, s := range []string{EntryItem(sharedmem.KindAgent, "a1", key).String(), EntryTarget(sharedmem.KindAgent, "a1", key).String()} {
		if strings.Contains(s, "maria") {
			t.Errorf("%q holds the key", s)
		}
	}
}

func TestParseItemRefuses(t *testing.T) {
	for _, s := range []string{
		"", "session", "session.", ".s1", "session.s1.x", "moon.x", "session_scope", "removal.r1",
		"entry:", "entry:user", "entry:user:u1", "entry:user::k", "entry:user:u1:", "entry:moon:x:k", "entry::x:k",
		"entry:user:u1:#", "entry:user:u1:#abc", "entry:user:u1:#" + strings.ToUpper(sha("k")), "entry:user:u1:#" + sha("k") + "0",
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
		{EntryTarget(sharedmem.KindProject, "p1", "k"), "entry:project:p1:#" + sha("k")},
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
	if got := EntryTarget(sharedmem.KindProject, "p1", "k").Named(); got != "entry:project:p1:k" {
		t.Errorf("a receipt names an entry target %q, want its key", got)
	}
	if RequestID(UserTarget("u1"), "p", "") != "" {
		t.Error("a request without a command id has a derived id")
	}
}

// FuzzParseItem: whatever ParseItem accepts, String spells back the same
// (an entry spelled by its key, as plans written before did, comes back
// spelled by its digest, the same entry).
func FuzzParseItem(f *testing.F) {
	for _, s := range []string{"session.s1", "session_scope.s1", "user.u1", "data.d", "entry:user:u1:diet", "entry:agent:a:x:y",
		"entry:agent:a:#" + keySum("x"), "agent.", "x.y.z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it, err := ParseItem(s)
		if err != nil {
			return
		}
		got := it.String()
		if it.Kind == ItemEntry && it.Key != "" {
			again, err := ParseItem(got)
			if err != nil || again.Scope != it.Scope || again.ID != it.ID || again.KeySum != it.KeySum || again.Key != "" {
				t.Fatalf("ParseItem(%q) = %+v, spelled %q, read back %+v, %v", s, it, got, again, err)
			}
			return
		}
		if got != s {
			t.Fatalf("ParseItem(%q) = %+v, spelled back %q", s, it, got)
		}
	})
}
