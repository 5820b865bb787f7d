package actors

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the actors' Prometheus instruments.
type Metrics struct {
	AppendLatency   prometheus.Histogram
	ActiveActors    prometheus.Gauge
	Snapshots       prometheus.Counter
	SnapshotErrors  prometheus.Counter
	Recoveries      prometheus.Counter
	RecoveryLatency prometheus.Histogram
	Conflicts       prometheus.Counter
	StoreFailures   prometheus.Counter
	Rejections      *prometheus.CounterVec
	// AssemblyAbandoned counts user messages whose sections, decided after
	// their append (Append.Later), did not come within AssemblyWait or came
	// after the session's partition was handed over.
	AssemblyAbandoned prometheus.Counter
}

// NewMetrics creates the instruments and registers them on reg (nil = not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		AppendLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentmem_append_seconds",
			Help:    "Time to append one command's event batch to the log.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
		ActiveActors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentmem_active_actors", Help: "Session actors currently active.",
		}),
		Snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_snapshots_total", Help: "Snapshots written.",
		}),
		SnapshotErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_snapshot_errors_total", Help: "Snapshots that failed to be written (the log still holds every event).",
		}),
		Recoveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_recoveries_total", Help: "Actor activations recovered from a snapshot and the log.",
		}),
		RecoveryLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentmem_recovery_seconds",
			Help:    "Time to recover an actor from its snapshot and log tail.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14),
		}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_append_conflicts_total", Help: "Appends refused because another writer moved the aggregate.",
		}),
		StoreFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_store_failures_total", Help: "Appends or loads that failed (503, actor restarted).",
		}),
		Rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_rejections_total", Help: "Commands refused, by code.",
		}, []string{"code"}),
		AssemblyAbandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_assembly_abandoned_total",
			Help: "User messages whose context sections, searched after their append was stored, did not come within the assembly wait, or came after the session's partition was handed over: the session served its held requests without them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.AppendLatency, m.ActiveActors, m.Snapshots, m.SnapshotErrors,
			m.Recoveries, m.RecoveryLatency, m.Conflicts, m.StoreFailures, m.Rejections, m.AssemblyAbandoned)
	}
	return m
}
