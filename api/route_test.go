package api

import (
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
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

// A forwarded request whose reply subject is not an inbox is dropped, not
// answered into it (only nodes reach _AMN.>, but a reply subject is a claim).
func TestServeForwardedAnswersInboxesOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := &Service{metrics: NewMetrics(reg), logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	refused := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "agentmem_api_refused_replies_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	for _, reply := range []string{"$JS.API.STREAM.PURGE.MEM", "mem.v1.agent.a2.delete", "_AMN.call.n1", "_R_.x.y"} {
		before := refused()
		s.ServeForwarded(&nats.Msg{Subject: "mem.v1.session.s1.context", Reply: reply})
		if refused() != before+1 {
			t.Errorf("reply %q: not refused", reply)
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
