package natsapi

import (
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/dispatch"
	"github.com/agentmem/agentmem/tenancy"
)

// noSessions is a dispatcher that is never reached.
type noSessions struct{ t *testing.T }

func (d noSessions) Dispatch(string, *tenancy.Caller, any, actors.ReplyFunc) error {
	d.t.Error("a refused request reached the actors")
	return nil
}

// A forwarded request whose reply subject is not an inbox is dropped, not
// answered into it (only nodes reach _AMN.>, but a reply subject is a claim).
func TestServeForwardedAnswersInboxesOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc, err := api.New(api.Deps{Dispatcher: noSessions{t}, Metrics: api.NewMetrics(reg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{svc: dispatch.New(svc)}
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
