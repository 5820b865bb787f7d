package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/tenancy"
)

// capturingRouter serves no aggregate here and keeps what is forwarded.
type capturingRouter struct{ got chan *nats.Msg }

func (capturingRouter) Serves(string) bool { return false }

func (r capturingRouter) Forward(_ context.Context, _ string, m *nats.Msg) (*nats.Msg, bool, error) {
	r.got <- m
	return &nats.Msg{Data: []byte(`{}`), Header: nats.Header{"Content-Type": {api.ContentTypeJSON}}}, false, nil
}

// noSessions is a dispatcher of session commands that is never reached.
type noSessions struct{ t *testing.T }

func (d noSessions) Dispatch(string, *tenancy.Caller, any, actors.ReplyFunc) error {
	d.t.Error("a forwarded request reached the actors")
	return nil
}

// TestForwardCarriesTheVerifiedCaller: a request served with Do for an
// aggregate another node serves is forwarded with the identity of the
// caller its transport verified, which the owner identifies as the same
// principal; no header of the original request stands for it.
func TestForwardCarriesTheVerifiedCaller(t *testing.T) {
	dir, err := tenancy.Load("../../examples/auth/tenants.json")
	if err != nil {
		t.Fatal(err)
	}
	who, known, err := dir.TokenCaller("a1-http-token")
	if !known || err != nil {
		t.Fatalf("token: %v %v", known, err)
	}
	r := capturingRouter{got: make(chan *nats.Msg, 1)}
	cfg := api.DefaultConfig()
	cfg.ForwardTimeout = time.Second
	svc, err := api.New(api.Deps{Dispatcher: noSessions{t}, Tenants: dir, Router: r}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop(context.Background()) }()
	replies := make(chan Reply, 1)
	l := &api.Request{Subject: "mem.v1.session.s1.context", Data: []byte(`{}`), Caller: who,
		Header: nats.Header{"Content-Type": {api.ContentTypeJSON}},
		Write:  func(data []byte, hdr nats.Header) { replies <- Reply{Data: data, Header: hdr} }}
	New(svc).forward(l, "s1", "", time.Time{}, func() { t.Error("served locally") })
	m := <-r.got
	owner, err := dir.Identify(m.Header)
	if err != nil || owner != who {
		t.Fatalf("the owner identifies %v (%v), want principal %s", owner, err, who.Principal)
	}
	if len(l.Header[tenancy.RequestInfoHeader]) != 0 {
		t.Fatal("the request's own headers were changed")
	}
	select {
	case rep := <-replies:
		if rep.Code() != 0 {
			t.Fatalf("reply %s", rep.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reply relayed")
	}
}
