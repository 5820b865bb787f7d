package node

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// logChecker is the log health check the node runs and /healthz reads: of
// the one stream (logHealth) or of each partition stream
// (partitionHealth).
type logChecker interface {
	Run(ctx context.Context) error
	Check(ctx context.Context) (string, error)
	Problem() string
}

var (
	_ logChecker = (*logHealth)(nil)
	_ logChecker = partitionHealth(nil)
)

// partitionHealth is the log health check of a log in K > 1 partitions:
// one logHealth per partition stream, each against its own removal ledger
// and its partition's projection checkpoint. agentmem_log_healthy is 1
// while every partition is healthy; a problem names its stream.
type partitionHealth []*logHealth

// newPartitionHealth checks each of l's streams; store (nil without a
// projector) gives each partition's checkpoint.
func newPartitionHealth(l *events.PartitionedLog, store *projections.Store, logger *slog.Logger, reg prometheus.Registerer) partitionHealth {
	hs := make(partitionHealth, l.Partitions())
	for i := range hs {
		var applied func() uint64
		if store != nil {
			applied = func() uint64 { return store.AppliedSeqOf(i) }
		}
		// Each partition's own gauge is not registered: the registered one
		// is their conjunction.
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_log_healthy", Help: logHealthHelp})
		hs[i] = newLogHealthGauge(l.Partition(i), l.Partition(i).Stream(), applied, logger, g)
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_log_healthy", Help: logHealthHelp}, func() float64 {
		if hs.Problem() != "" {
			return 0
		}
		return 1
	}))
	return hs
}

// Run runs each partition's check until ctx ends.
func (hs partitionHealth) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = h.Run(ctx) // returns nil when ctx ends
		}()
	}
	wg.Wait()
	return nil
}

// Check has every partition's check look now and returns the first
// problem found ("": all healthy).
func (hs partitionHealth) Check(ctx context.Context) (string, error) {
	var first string
	for _, h := range hs {
		p, err := h.Check(ctx)
		if err != nil {
			return "", err
		}
		if p != "" && first == "" {
			first = "stream " + h.stream + ": " + p
		}
	}
	return first, nil
}

// Problem is the first partition's problem, naming its stream ("": all
// healthy).
func (hs partitionHealth) Problem() string {
	for _, h := range hs {
		if p := h.Problem(); p != "" {
			return "stream " + h.stream + ": " + p
		}
	}
	return ""
}
