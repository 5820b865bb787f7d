package inspector

import (
	"testing"

	"github.com/agentmem/agentmem/tenancy"
)

// TestViewerWrites: the forms a viewer is offered follow the API's rules:
// the single user and an admin everything; a writer its own scopes but
// not a project's (elevated) nor an erase of a shared scope; a reader
// nothing.
func TestViewerWrites(t *testing.T) {
	writer := &tenancy.Caller{Principal: "w", Users: []string{"ann"}, Agent: "a1", Scopes: []string{"workflow:rel", "project:atlas"}, Role: tenancy.RoleWriter}
	reader := &tenancy.Caller{Principal: "r", Users: []string{"ann"}, Scopes: []string{"workflow:rel"}, Role: tenancy.RoleReader}
	admin := &tenancy.Caller{Principal: "boss", Role: tenancy.RoleAdmin}
	for _, c := range []struct {
		who             *tenancy.Caller
		kind, id        string
		write, eraseAll bool
	}{
		{nil, "project", "atlas", true, true},
		{admin, "workflow", "any", true, true},
		{admin, "session", "s1", true, true},
		{writer, "workflow", "rel", true, false},
		{writer, "workflow", "other", false, false},
		{writer, "project", "atlas", false, false},
		{writer, "user", "ann", true, true},
		{writer, "agent", "a1", true, true},
		{writer, "session", "s1", false, false},
		{reader, "workflow", "rel", false, false},
		{reader, "user", "ann", false, false},
	} {
		v := &viewer{name: "v", caller: c.who}
		if got := v.mayWrite(c.kind, c.id); got != c.write {
			t.Errorf("%v mayWrite %s:%s = %v", c.who, c.kind, c.id, got)
		}
		if got := v.mayErase(c.kind, c.id); got != c.eraseAll {
			t.Errorf("%v mayErase %s:%s = %v", c.who, c.kind, c.id, got)
		}
	}
}
