package node_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestMetricsEndpoint(t *testing.T) {
	n, nc := node.StartForTest(t, func(c *node.Config) { c.HTTPAddr = "127.0.0.1:0" })
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "m1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "m1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"agentmem_append_seconds_count 2", "agentmem_active_actors 1", "agentmem_recoveries_total 1", "agentmem_snapshots_total",
		"agentmem_log_available 1", "agentmem_jetstream_enabled 1", "agentmem_projector_healthy 1", "agentmem_projector_write_retries_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	code, h := healthz(t, n)
	if code != http.StatusOK || h["status"] != "ok" || h["failing"] != nil {
		t.Errorf("/healthz of a healthy node = %d %v", code, h)
	}
	if ok, failing := n.Healthy(); !ok {
		t.Errorf("Healthy = false, failing %v", failing)
	}
}
