package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/api/metrics"
)

// Metrics are the service's Prometheus instruments (package metrics).
type Metrics = metrics.Metrics

// NewMetrics creates the instruments and registers them on reg (nil = not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics { return metrics.New(reg) }
