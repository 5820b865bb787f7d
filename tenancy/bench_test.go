package tenancy

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// BenchmarkIdentifyAndCheck is the node's whole per-request identity cost:
// read the server-stamped header, map it to a principal, check a session
// access.
func BenchmarkIdentifyAndCheck(b *testing.B) {
	d, err := New(Config{NodeAccount: "MEM", Principals: []Principal{
		{Name: "a1", Account: "a1", User: "agent-a1", Role: RoleWriter, Agent: "a1", Users: []string{"u1"}},
		{Name: "a2", Account: "a2", User: "agent-a2", Role: RoleWriter, Agent: "a2", Users: []string{"u2"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	h := nats.Header{RequestInfoHeader: []string{`{"start":"2026-11-22T14:00:00Z","host":"127.0.0.1","id":10,"acc":"a1","user":"agent-a1","name":"worker","lang":"go","ver":"1.55.0","rtt":130815,"server":"n1","kind":"Client","client_type":"nats"}`}}
	b.ReportAllocs()
	for b.Loop() {
		c, err := d.Identify(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Session("s1", "u1", "a1", true); err != nil {
			b.Fatal(err)
		}
	}
}
