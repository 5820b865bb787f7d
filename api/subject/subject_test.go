package subject

import (
	"errors"
	"testing"

	"github.com/agentmem/agentmem/internal/sharedmem"
)

// TestParseValid: each family's layout reads into its parts.
func TestParseValid(t *testing.T) {
	for s, want := range map[string]Subject{
		"mem.v1.session.s1.append":        {Family: Session, ID: "s1", Op: "append"},
		"mem.v1.agent.a-1.put":            {Family: Agent, ID: "a-1", Op: "put"},
		"mem.v1.user.u1.erase":            {Family: User, ID: "u1", Op: "erase"},
		"mem.v1.scope.user.u1.get":        {Family: Scope, Kind: "user", ID: "u1", Op: "get"},
		"mem.v1.scope.session.s1.resolve": {Family: Scope, Kind: "session", ID: "s1", Op: "resolve"},
		"mem.v1.sessions.list":            {Family: Sessions, Op: "list"},
		"mem.v1.data.put":                 {Family: Data, Op: "put"},
		"mem.v1.tools.list":               {Family: Tools, Op: "list"},
	} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
}

// TestParseMalformed: a subject with too few or too many tokens (an id
// with a dot), outside the API or of no family is a 400 naming the part
// it stands for.
func TestParseMalformed(t *testing.T) {
	for s, field := range map[string]string{
		"mem.v1.session.s.1.append":  "session_id", // a dot in the id
		"mem.v1.session.s1":          "session_id",
		"mem.v1.session.s1.":         "session_id",
		"mem.v1.user.u.1.erase":      "user_id",
		"mem.v1.agent.a.1.put":       "id",
		"mem.v1.agent.a1":            "id",
		"mem.v1.scope.user.u1":       "id",
		"mem.v1.scope.user.u.1.get":  "id",
		"mem.v1.sessions.list.extra": "subject",
		"mem.v1.data":                "subject",
		"mem.v2.session.s1.append":   "subject",
		"mem.ev.session.s1":          "subject",
		"mem.v1.tenant.t1.s1.append": "subject", // no such family
		"mem.v1.sessionx.s1.append":  "subject",
		"":                           "subject",
	} {
		_, err := Parse(s)
		var e *Error
		if !errors.As(err, &e) || e.Field != field {
			t.Errorf("Parse(%q) = %v; want a 400 on %s", s, err, field)
			continue
		}
		if code, _, _ := e.Status(); code != 400 {
			t.Errorf("Parse(%q): code %d", s, code)
		}
	}
}

// TestWrongSegment: a well-formed subject whose kind or id segment is not
// one the family takes is refused by the accessor, not served elsewhere:
// an agent's memory under scope, an unknown kind, the global scope under
// another id, an id with a byte no id has, an accessor of another family.
func TestWrongSegment(t *testing.T) {
	scope := func(s string) error {
		p, err := Parse(s)
		if err != nil {
			return err
		}
		_, _, err = p.ScopeTarget()
		return err
	}
	for _, s := range []string{
		"mem.v1.scope.agent.a1.get", // agent memory is mem.v1.agent.<id>
		"mem.v1.scope.tenant.t1.get",
		"mem.v1.scope.global.other.get",
		"mem.v1.scope.user.u$1.get",
		"mem.v1.session.s1.get", // a session is no scope family
	} {
		if scope(s) == nil {
			t.Errorf("ScopeTarget of %q: no error", s)
		}
	}
	if _, err := SessionOf("mem.v1.session.s*1.append"); err == nil {
		t.Error("a session id with * passed")
	}
	if _, err := SessionOf("mem.v1.user.u1.erase"); err == nil {
		t.Error("a user subject read as a session")
	}
	p, _ := Parse("mem.v1.session.u1.erase")
	if _, err := p.UserID(); err == nil {
		t.Error("a session subject read as a user")
	}
	kind, id, err := func() (sharedmem.Kind, string, error) { p, _ := Parse("mem.v1.agent.a1.put"); return p.ScopeTarget() }()
	if err != nil || kind != sharedmem.KindAgent || id != "a1" {
		t.Errorf("agent scope: %s %s %v", kind, id, err)
	}
}

// TestAggregate: sessions, agents and scopes are placed, by their id;
// their watches and the families without an id are not.
func TestAggregate(t *testing.T) {
	for s, want := range map[string]string{
		"mem.v1.session.s1.append":        "s1",
		"mem.v1.agent.a-1.put":            "a-1",
		"mem.v1.scope.user.u1.get":        "u1",
		"mem.v1.scope.session.s1.resolve": "s1",
		"mem.v1.session.s1.watch":         "",
		"mem.v1.scope.user.u1.watch":      "",
		"mem.v1.user.u1.erase":            "",
		"mem.v1.sessions.list":            "",
		"mem.v1.data.put":                 "",
	} {
		p, err := Parse(s)
		if err != nil {
			t.Fatal(s, err)
		}
		got, ok := p.Aggregate()
		if got != want || ok != (want != "") {
			t.Errorf("Aggregate(%q) = %q, %v; want %q", s, got, ok, want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if p, err := Parse("mem.v1.session.s-1234.append"); err != nil || p.ID != "s-1234" {
			b.Fatal(p, err)
		}
	}
}
