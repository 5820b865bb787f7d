package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkTenancy measures what verified identity costs: the same append
// and the same queries, in the same run and process, on
//
//   - no-tenants: a single-user node (every request is the unrestricted
//     caller, same account);
//
//   - imports: examples/auth's NATS config without the tenants file (the
//     caller in its own account, the request crossing a service import
//     with share: true: the server's part of the cost);
//
//   - tenants: examples/auth complete (Nats-Request-Info parsed and mapped
//     to a principal, access checked: the node's part is tenants − imports).
//
//   - append: one client, serial, ~200-byte user message.
//
//   - context: the session's context (served by its actor, access checked there).
//
//   - search: BM25 over the session from the projection (access checked
//     against the projection's session index).
func BenchmarkTenancy(b *testing.B) {
	_, plainNC := node.StartForTest(b, nil)
	asA1 := func(tenants string) *client.Client {
		n, _ := node.StartForTest(b, func(c *node.Config) {
			c.NATSConfig, c.Tenants = "../examples/auth/nats.conf", tenants
			c.NATSUser, c.NATSPassword = "node", "node-secret"
			c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
		})
		nc, err := nats.Connect(n.ClientURL(), nats.UserInfo("agent-a1", "a1-secret"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return client.New(nc)
	}
	for _, mode := range []struct {
		name string
		c    *client.Client
	}{{"no-tenants", client.New(plainNC)}, {"imports", asA1("")}, {"tenants", asA1("../examples/auth/tenants.json")}} {
		c := mode.c
		waitServing(b, c)
		b.Run("append/"+mode.name, func(b *testing.B) { benchOneClient(b, c) })
		ids := newBenchSessions(b, c, 1)
		if _, err := benchAppends(c, ids, 50, nil); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for _, q := range []struct {
			name string
			run  func() error
		}{
			{"context", func() error { _, err := c.Context(ctx, ids[0]); return err }},
			{"search", func() error {
				_, err := c.Search(ctx, ids[0], &memoryv1.SearchRequest{Query: "orders Alice region", Limit: 5})
				return err
			}},
		} {
			b.Run(q.name+"/"+mode.name, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					t0 := time.Now()
					if err := q.run(); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				elapsed := time.Since(start)
				b.StopTimer()
				reportLatency(b, lat, elapsed, "ops/s")
			})
		}
	}
}
