package events

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "A-z_09", strings.Repeat("x", MaxIDLen), "0", "-", "_"} {
		if err := ValidateID("id", id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", "a.b", "a*", ">", "a b", "é", "a/b", "a\x00", strings.Repeat("x", MaxIDLen+1), "a\n"} {
		err := ValidateID("session_id", id)
		if !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", id, err)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "session_id" || fe.Reason == "" {
			t.Errorf("ValidateID(%q) = %#v, want *FieldError for session_id", id, err)
		}
		if !strings.HasPrefix(err.Error(), "session_id: ") {
			t.Errorf("error %q does not start with the field", err)
		}
	}
}

func TestSubjects(t *testing.T) {
	cases := []struct{ subj, kind, id string }{
		{SessionSubject("abc"), "session", "abc"},
		{AgentSubject("a-1"), "agent", "a-1"},
		{ScopeSubject("workflow", "w_9"), "workflow", "w_9"},
	}
	for _, c := range cases {
		if !strings.HasPrefix(c.subj, "mem.ev.") {
			t.Fatalf("%s lacks the prefix", c.subj)
		}
		kind, id, err := ParseSubject(c.subj)
		if err != nil || kind != c.kind || id != c.id {
			t.Fatalf("ParseSubject(%q) = %q, %q, %v", c.subj, kind, id, err)
		}
	}
	if got := SessionSubject("s1"); got != "mem.ev.session.s1" {
		t.Fatalf("SessionSubject = %q", got)
	}
	for _, bad := range []string{"", "mem.ev", "mem.ev.", "mem.ev.session", "mem.ev.session.", "mem.ev..x",
		"mem.ev.session.a.b", "mem.ev.session.*", "mem.ev.>", "mem.evx.session.a", "x.mem.ev.session.a"} {
		if _, _, err := ParseSubject(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseSubject(%q) = %v, want ErrInvalidID", bad, err)
		}
	}
}

func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"mem.ev.session.a", "mem.ev.a.b.c", "mem.ev.*.>", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subj string) {
		kind, id, err := ParseSubject(subj)
		if err != nil {
			return
		}
		if ValidateID("kind", kind) != nil || ValidateID("id", id) != nil || ScopeSubject(kind, id) != subj {
			t.Fatalf("ParseSubject(%q) accepted %q, %q", subj, kind, id)
		}
	})
}
