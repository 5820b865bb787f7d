package placement

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	owned    prometheus.Gauge
	acquired *prometheus.CounterVec
	released prometheus.Counter
	lost     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_placement_partitions_owned",
			Help: "Partitions whose lease this node holds."}),
		acquired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentmem_placement_acquired_total",
			Help: "Partition leases taken, by what they were before: free (new or handed over), expired (a failover: its owner stopped refreshing), own (this node's previous run)."},
			[]string{"from"}),
		released: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentmem_placement_released_total",
			Help: "Partitions handed over to another node (rebalance or shutdown)."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentmem_placement_lost_total",
			Help: "Partition leases lost without a handover (not refreshed in time, or the key changed)."}),
	}
	if reg != nil {
		reg.MustRegister(m.owned, m.acquired, m.released, m.lost)
	}
	return m
}
