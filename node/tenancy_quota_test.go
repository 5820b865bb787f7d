package node_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// TestTenantQuotas: with the example's principals and small limits, a1 is
// refused a third session (413 max_sessions), a fourth entry in a scope
// (413 max_entries_per_scope) and a value that would pass the scope's bytes
// (413 max_bytes_per_scope); replacing an existing key is still allowed;
// another tenant is not affected; the refusals are counted in /metrics.
func TestTenantQuotas(t *testing.T) {
	n := startSmallQuotaNode(t, func(c *node.Config) { c.HTTPAddr = "127.0.0.1:0" })
	tn := &tenantNode{n: n, url: n.ClientURL()}
	a1, a2 := tn.as(t, "agent-a1", "a1-secret"), tn.as(t, "agent-a2", "a2-secret")
	ctx := context.Background()
	refused := func(err error, limit string) {
		t.Helper()
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != 413 || ce.Field != limit {
			t.Fatalf("got %v, want 413 %s", err, limit)
		}
	}
	for _, id := range []string{"q1", "q2"} {
		if _, err := a1.c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a1.c.ListSessions(ctx, &memoryv1.ListSessionsRequest{AgentId: "a1", MinSeq: a1.c.LastWriteSeq()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a1.c.CreateSession(ctx, "q3", &memoryv1.CreateSessionRequest{UserId: "u1"})
	refused(err, "max_sessions")
	if _, err := a2.c.CreateSession(ctx, "q4", &memoryv1.CreateSessionRequest{UserId: "u2"}); err != nil {
		t.Fatalf("a2 is not bounded by a1's sessions: %v", err)
	}

	w1 := client.Workflow("w1")
	for _, k := range []string{"k1", "k2", "k3"} {
		if _, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: k, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: "k4", Value: []byte("v")})
	refused(err, "max_entries_per_scope")
	if _, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: "k1", Value: []byte("replaced")}); err != nil {
		t.Fatalf("replacing a key within the entry limit: %v", err)
	}
	_, err = a1.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "big", Value: []byte(strings.Repeat("x", 1001))})
	refused(err, "max_bytes_per_scope")

	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{`agentmem_api_limited_total{limit="max_sessions"} 1`, `agentmem_api_limited_total{limit="max_entries_per_scope"} 1`, `agentmem_api_limited_total{limit="max_bytes_per_scope"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestTenantQuotaAttacks: with the example's principals and small limits
// (3 entries, 1000 bytes per scope, 3000 bytes of large data), a1 tries to
// fill what others write to and to store more than its quotas (issue 18,
// findings 3 and 4). A quota on a shared scope bounds each writer's own
// entries and bytes; bytes are counted on every applied event, through
// every write path (put, replace, rollback, publish, data.put). `go test
// -v` prints the table.
func TestTenantQuotaAttacks(t *testing.T) {
	data, err := os.ReadFile(tenantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg tenancy.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Limits = tenancy.Limits{MaxEntriesPerScope: 3, MaxBytesPerScope: 1000, MaxDataBytes: 3000}
	small := filepath.Join(t.TempDir(), "tenants.json")
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(small, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.Tenants = tenantsNATSConf, small
		c.NATSUser, c.NATSPassword = "node", "node-secret"
		c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
	})
	tn := &tenantNode{n: n, url: n.ClientURL()}
	a1, a2, f1 := tn.as(t, "agent-a1", "a1-secret"), tn.as(t, "agent-a2", "a2-secret"), tn.as(t, "front-u1", "u1-secret")
	ctx := context.Background()
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	res := func(err error) outcome {
		if err != nil {
			return outcome{code: client.Code(err), field: err.Error()}
		}
		return outcome{}
	}
	put := func(u *tenant, sc client.Scope, key string, size int) func() outcome {
		return func() outcome {
			_, err := u.c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: key, Value: random(size)})
			return res(err)
		}
	}
	var cases []attack
	add := func(want, name string, run func() outcome) { cases = append(cases, attack{name, run, want}) }
	w1, g, u1 := client.Workflow("w1"), client.Global(), client.User("u1")

	// Finding 3: a1's entries do not block a2's writes to a shared scope.
	for _, sc := range []client.Scope{w1, g} {
		for _, k := range []string{"a1-k1", "a1-k2", "a1-k3"} {
			add("ok", "a1 fills "+sc.String()+" "+k, put(a1, sc, k, 10))
		}
		add("413", "a1 past its own entries in "+sc.String(), put(a1, sc, "a1-k4", 10))
		add("ok", "a2's first put in "+sc.String()+" after a1 filled it", put(a2, sc, "a2-k1", 10))
		add("ok", "a1 replaces its own key in "+sc.String(), put(a1, sc, "a1-k1", 20))
	}
	// Bytes per writer: a1 and u1's front end share user u1.
	add("ok", "a1 puts 900 bytes in user u1", put(a1, u1, "a1-big", 900))
	add("ok", "front-u1 puts 900 bytes in user u1 after a1", put(f1, u1, "f1-big", 900))
	add("413", "a1 past its own bytes in user u1", put(a1, u1, "a1-more", 200))
	// Finding 4: bytes are counted on every applied event, not only on load.
	me := client.Agent("a1")
	add("ok", "a1 puts 600 bytes in its agent memory", put(a1, me, "big1", 600))
	add("413", "a1 puts another 600 bytes in its agent memory", put(a1, me, "big2", 600))
	add("ok", "a1 replaces its 600 bytes with 600 bytes", put(a1, me, "big1", 600))
	add("413", "a1 puts 600 bytes after the replacement", put(a1, me, "big3", 600))
	add("ok", "a1 deletes big1", func() outcome {
		_, err := a1.c.DeleteEntry(ctx, me, &memoryv1.DeleteEntryRequest{Key: "big1"})
		return res(err)
	})
	add("ok", "a1 puts 600 bytes after the delete freed its bytes", put(a1, me, "big4", 600))
	add("ok", "a1 session s-q", func() outcome {
		_, err := a1.c.CreateSession(ctx, "s-q", &memoryv1.CreateSessionRequest{UserId: "u1"})
		return res(err)
	})
	sq := client.SessionScope("s-q")
	add("ok", "a1 puts r 900 bytes (version 1)", put(a1, sq, "r", 900))
	add("ok", "a1 replaces r with 1 byte", put(a1, sq, "r", 1))
	add("ok", "a1 puts f 500 bytes", put(a1, sq, "f", 500))
	add("413", "a1 rolls r back to its 900 bytes", func() outcome {
		_, err := a1.c.Rollback(ctx, sq, &memoryv1.RollbackEntryRequest{Key: "r", ToVersion: 1})
		return res(err)
	})
	add("ok", "a1 puts pub 300 bytes in its session scope", put(a1, sq, "pub", 300))
	add("413", "a1 publishes 300 bytes into user u1 past its bytes", func() outcome {
		_, err := a1.c.Publish(ctx, "s-q", "pub", "user")
		return res(err)
	})
	// data.put has a byte quota per caller.
	putData := func(u *tenant, size int) func() outcome {
		return func() outcome {
			_, err := u.c.PutData(ctx, random(size), "application/octet-stream", nil, 0)
			return res(err)
		}
	}
	add("ok", "a1 data.put 2000 bytes", putData(a1, 2000))
	add("413", "a1 data.put 2000 more bytes", putData(a1, 2000))
	add("ok", "a2 data.put 2000 bytes (its own quota)", putData(a2, 2000))

	t.Logf("%-60s %-6s %s", "case", "want", "got")
	for _, c := range cases {
		got := c.run()
		t.Logf("%-60s %-6s %s", c.name, c.want, got)
		if !refusedAs(got, c.want) {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if c.want == "413" && got.code == 413 && !strings.Contains(got.field, "max_") {
			t.Errorf("%s: %s does not name the limit", c.name, got.field)
		}
	}
}

// startSmallQuotaNode starts a node on the example's principals with small
// limits (2 sessions, 3 entries and 1,000 bytes a scope), then more.
func startSmallQuotaNode(t *testing.T, more func(*node.Config)) *node.Node {
	t.Helper()
	data, err := os.ReadFile(tenantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg tenancy.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Limits = tenancy.Limits{MaxSessions: 2, MaxEntriesPerScope: 3, MaxBytesPerScope: 1000}
	small := filepath.Join(t.TempDir(), "tenants.json")
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(small, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.Tenants = tenantsNATSConf, small
		c.NATSUser, c.NATSPassword = "node", "node-secret"
		c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
		if more != nil {
			more(c)
		}
	})
	return n
}
