package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
)

// blockingLog is a log whose appends wait until their context ends, as an
// append to a stream without quorum waits for its acknowledgement.
type blockingLog struct{ events.Log }

func (blockingLog) Append(ctx context.Context, subject string, _ uint64, _ string, _ []byte) (events.AppendResult, error) {
	<-ctx.Done()
	return events.AppendResult{}, fmt.Errorf("%w: append to %s: %w", events.ErrUnknownOutcome, subject, ctx.Err())
}

// idIn is an aggregate id in log partition p of k.
func idIn(p, k int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("a%d", i); events.LogPartition(id, k) == p {
			return id
		}
	}
}

// TestGatePerPartition: with the log in four partitions, the watch
// observing partition 2's stream alone without quorum refuses partition
// 2's writes and reads (the reason naming the partition and its stream),
// cancels its append in flight and answers its queued write, and leaves
// the other partitions alone; agentmem_log_partition_available says so,
// agentmem_log_available stays 1. When partition 2 is back, its writes
// pass again; when every partition is lost, the whole log is (no_quorum).
func TestGatePerPartition(t *testing.T) {
	const k = 4
	reg := prometheus.NewRegistry()
	w := newStorageWatch(nil, nil, nil, -1, time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), newStorageMetrics(reg, nil))
	w.setPartitions("MEM", k)
	observe := func(st *storageState) {
		prev := w.State()
		w.state.Store(st)
		w.metrics.set(st)
		w.report(prev, st)
	}
	lost2 := &storageState{Log: healthy, JetStream: healthy, Projector: healthy, FreeBytes: -1,
		Lost: []partitionPart{{Partition: 2, Stream: "MEM_P2", part: fault(reasonNoQuorum, "log partition 2 (stream MEM_P2): no leader")}}}

	g := gatedLog{Log: blockingLog{}, w: w}
	in2 := events.SessionSubject(idIn(2, k))
	appended := make(chan error, 1)
	go func() {
		_, err := g.Append(context.Background(), in2, 0, "m1", []byte("x"))
		appended <- err
	}()
	a := answerBy{w: w, timeout: time.Hour}
	queued := make(chan error, 1)
	a.guard(func(_ proto.Message, err error) { queued <- err }, true, 2)
	time.Sleep(20 * time.Millisecond) // the append waits
	observe(lost2)

	for what, ch := range map[string]chan error{"the append in flight": appended, "the queued write": queued} {
		select {
		case err := <-ch:
			if what == "the queued write" && !errors.Is(err, actors.ErrUnavailable) {
				t.Errorf("the queued write: %v, not actors.ErrUnavailable (503)", err)
			}
			if !strings.Contains(err.Error(), "log partition 2 (stream MEM_P2)") || !strings.Contains(err.Error(), reasonNoQuorum) {
				t.Errorf("%s of partition 2 when it lost its quorum: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s of partition 2 not cut short when the partition lost its quorum", what)
		}
	}
	for p := range k {
		id := idIn(p, k)
		werr := w.refuseWrite(g.partition(events.SessionSubject(id)), 10)
		rerr := w.refuseIn(w.partitionOfID(id), true)
		if (werr != nil) != (p == 2) || (rerr != nil) != (p == 2) {
			t.Errorf("partition %d with partition 2 lost: write refused %v, read refused %v", p, werr, rerr)
		}
		if p == 2 && (!errors.Is(werr, errLogUnavailable) || !strings.Contains(werr.Error(), "MEM_P2")) {
			t.Errorf("partition 2's write: %v", werr)
		}
		if got, want := gatheredGauge(t, reg, "agentmem_log_partition_available", fmt.Sprint(p)), b2f(p != 2); got != want {
			t.Errorf("agentmem_log_partition_available{partition=%d} = %v, want %v", p, got, want)
		}
	}
	if got := gatheredGauge(t, reg, "agentmem_log_available", ""); got != 1 {
		t.Errorf("agentmem_log_available = %v with one partition lost, want 1", got)
	}
	if w.Down().Err() != nil || w.DownOf(1).Err() != nil || w.DownOf(2).Err() == nil {
		t.Errorf("down contexts: log %v, partition 1 %v, partition 2 %v", w.Down().Err(), w.DownOf(1).Err(), w.DownOf(2).Err())
	}

	observe(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, FreeBytes: -1})
	if err := w.refuseWrite(2, 10); err != nil || w.DownOf(2).Err() != nil {
		t.Errorf("partition 2 back: write %v, down %v", err, w.DownOf(2).Err())
	}

	all := fault(reasonNoQuorum, "none of the 4 log partition streams has its quorum")
	observe(&storageState{Log: all, JetStream: all, Projector: healthy, FreeBytes: -1})
	for p := range k {
		if err := w.refuseWrite(p, 10); err == nil || !strings.Contains(err.Error(), "none of the 4") {
			t.Errorf("partition %d with every partition lost: %v", p, err)
		}
		if got := gatheredGauge(t, reg, "agentmem_log_partition_available", fmt.Sprint(p)); got != 0 {
			t.Errorf("agentmem_log_partition_available{partition=%d} = %v with every partition lost", p, got)
		}
	}
	if w.Down().Err() == nil {
		t.Error("every partition lost: the log's down context not cancelled")
	}
}

// gatheredGauge is gauge name of reg, its series with label partition
// (unlabelled: "").
func gatheredGauge(t *testing.T, reg *prometheus.Registry, name, partition string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" {
					got = l.GetValue()
				}
			}
			if got == partition {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{partition=%q}", name, partition)
	return 0
}
