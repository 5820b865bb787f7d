package dispatch

import "testing"

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
