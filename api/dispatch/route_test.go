package dispatch

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/api"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestAggregateOf(t *testing.T) {
	for subject, want := range map[string]string{
		"mem.v1.session.s1.append":        "s1",
		"mem.v1.session.s1.context":       "s1",
		"mem.v1.agent.a-1.put":            "a-1",
		"mem.v1.scope.user.u1.get":        "u1",
		"mem.v1.scope.session.s1.resolve": "s1",
		"mem.v1.session.s1.watch":         "", // any node reads the log
		"mem.v1.scope.user.u1.watch":      "",
		"mem.v1.sessions.list":            "",
		"mem.v1.data.put":                 "",
		"mem.v1.tools.list":               "",
		"mem.v1.session.s.1.append":       "", // malformed: answered where received
		"mem.v2.session.s1.append":        "",
	} {
		got, ok := aggregateOf(subject)
		if got != want || ok != (want != "") {
			t.Errorf("aggregateOf(%q) = %q, %v; want %q", subject, got, ok, want)
		}
	}
}

func BenchmarkAggregateOf(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if _, ok := aggregateOf("mem.v1.session.s-1234.append"); !ok {
			b.Fatal("not placed")
		}
	}
}

// TestServeFindsTheOperation: the dispatcher answers a subject with its
// operation, or with the 404 naming a family's operations, the 400 of an
// id with dots, or the 404 of a subject nothing serves (here a node
// without scopes: agent memory is not served).
func TestServeFindsTheOperation(t *testing.T) {
	svc, err := api.New(api.Deps{Dispatcher: noSessions{t}}, api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop(context.Background()) }()
	d := New(svc)
	for subject, want := range map[string]struct {
		code  int
		field string
	}{
		"mem.v1.tools.list":         {0, ""},
		"mem.v1.session.s1.apend":   {404, "operation"},
		"mem.v1.session.a.b.append": {400, "session_id"},
		"mem.v1.tools.nope":         {404, "operation"},
		"mem.v1.agent.a1.put":       {404, "operation"},
		"mem.v1.agent.a.b.put":      {404, "operation"},
		"mem.v2.session.s1.append":  {404, "operation"},
	} {
		rep, err := d.Do(context.Background(), subject, []byte(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Code() != want.code {
			t.Errorf("%s: code %d (%s), want %d", subject, rep.Code(), rep.Data, want.code)
			continue
		}
		var detail memoryv1.ErrorDetail
		if want.code != 0 {
			if err := protojson.Unmarshal(rep.Data, &detail); err != nil || detail.GetField() != want.field {
				t.Errorf("%s: %s (%v), want field %s", subject, rep.Data, err, want.field)
			}
		}
	}
	rep, _ := d.Do(context.Background(), "mem.v1.session.s1.apend", []byte(`{}`), nil)
	if !strings.Contains(string(rep.Data), "append,clear_recalled") {
		t.Errorf("the unknown operation's 404 does not name the session's: %s", rep.Data)
	}
}
