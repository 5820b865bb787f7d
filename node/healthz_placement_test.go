package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/placement"
)

// TestHealthzPlacement: the placement part of /healthz and its rule. With
// the bucket's quorum: "placement":{"ok":true}, status ok. Without it:
// 503 unavailable, failing [placement], while the node serves no
// partition; 200 degraded, failing [placement], the detail counting the
// partitions, while it serves some (kept past their leases); beside lost
// log partitions, failing [log_partitions placement]; with the log
// unavailable too, 503 and placement named after the log's parts.
func TestHealthzPlacement(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Bool
	cfg := placement.DefaultConfig()
	cfg.NodeID, cfg.LeaseTTL = "a", time.Second
	tbl, err := placement.New(t.Context(), js, cfg, placement.Hooks{BucketLost: lost.Load})
	if err != nil {
		t.Fatal(err)
	}
	w := newStorageWatch(nil, js, nil, -1, time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), newStorageMetrics(prometheus.NewRegistry(), nil))
	w.bucket = "KV_" + cfg.Bucket
	n := &Node{storage: w, placement: tbl}
	check := func(what string, wantCode int, wantStatus string, wantFailing ...string) healthReport {
		t.Helper()
		r := n.health()
		rec := httptest.NewRecorder()
		n.writeHealth(rec, r)
		if rec.Code != wantCode || r.Status != wantStatus || !slices.Equal(r.Failing, wantFailing) {
			t.Errorf("%s: %d %s failing %v, want %d %s failing %v", what, rec.Code, r.Status, r.Failing, wantCode, wantStatus, wantFailing)
		}
		if r.Placement == nil {
			t.Errorf("%s: no placement part", what)
		}
		return r
	}
	if r := check("bucket healthy", http.StatusOK, "ok"); r.Placement != nil && !r.Placement.OK {
		t.Errorf("bucket healthy: placement %+v", r.Placement)
	}
	noQuorum := fault(reasonNoQuorum, "the placement bucket's stream KV_MEM_PLACEMENT has no leader")
	w.state.Store(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, Placement: noQuorum, FreeBytes: -1})
	lost.Store(true)
	check("bucket lost, no partition held", http.StatusServiceUnavailable, "unavailable", "placement")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tbl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	lost.Store(false) // claims are written while the bucket is fine
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer rcancel()
	if err := tbl.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	lost.Store(true)
	r := check("bucket lost, partitions held", http.StatusOK, "degraded", "placement")
	if r.Placement != nil && (r.Placement.OK || r.Placement.Reason != reasonNoQuorum || !strings.Contains(r.Placement.Detail, "this node serves 64 partitions")) {
		t.Errorf("placement part %+v: want no_quorum, the detail counting 64 partitions", r.Placement)
	}
	w.state.Store(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, Placement: noQuorum, FreeBytes: -1,
		Lost: []partitionPart{{Partition: 2, Stream: "MEM_P2", part: fault(reasonNoQuorum, "x")}}})
	check("bucket and a log partition lost", http.StatusOK, "degraded", "log_partitions", "placement")
	down := fault(reasonNoQuorum, "the log stream MEM has no leader")
	w.state.Store(&storageState{Log: down, JetStream: down, Projector: healthy, Placement: noQuorum, FreeBytes: -1})
	check("bucket and log lost", http.StatusServiceUnavailable, "unavailable", "log", "jetstream", "placement")
}
