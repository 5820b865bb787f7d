package api

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the service's Prometheus instruments.
type Metrics struct {
	// RefusedReplies counts requests dropped because their reply subject is
	// not an inbox (see replyAllowed).
	RefusedReplies prometheus.Counter
	// Denied counts requests refused by the caller's permissions (403), by
	// operation family.
	Denied *prometheus.CounterVec
	// Limited counts requests refused by a per-caller or node limit (429/413),
	// by limit name.
	Limited *prometheus.CounterVec
	// AssemblyErrors counts candidate searches of the context assembler
	// that failed (the append went on without those candidates), by part.
	AssemblyErrors *prometheus.CounterVec
	// Forwards counts requests forwarded to the node that serves their
	// aggregate, by outcome (ok, error).
	Forwards *prometheus.CounterVec
	// ConsolidatedFacts counts the facts consolidation extracted, by
	// outcome (written, duplicate, unchanged, review, skipped, dry_run);
	// ConsolidationErrors the background consolidations that failed.
	ConsolidatedFacts   *prometheus.CounterVec
	ConsolidationErrors prometheus.Counter
}

// NewMetrics creates the instruments and registers them on reg (nil = not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RefusedReplies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_api_refused_replies_total",
			Help: "Requests dropped unanswered because their reply subject is not an inbox (_INBOX., _R_.) or lies in the node's own subject space.",
		}),
		Denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_api_denied_total",
			Help: "Requests refused (403) by the verified caller's permissions, by operation family.",
		}, []string{"family"}),
		Limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_api_limited_total",
			Help: "Requests refused (429/413) by a per-caller or node limit, by limit name.",
		}, []string{"limit"}),
		AssemblyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_api_assembly_errors_total",
			Help: "Context assembler candidate searches that failed (the append was stored without those candidates; the log says why), by part (recall, memory).",
		}, []string{"part"}),
		Forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_api_forwards_total",
			Help: "Requests forwarded to the node that serves their aggregate (a cluster), by outcome: ok (the owner's reply was relayed), error (no owner within the forward timeout, or it did not answer: 503).",
		}, []string{"outcome"}),
		ConsolidatedFacts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_consolidation_facts_total",
			Help: "Facts consolidation extracted from sessions, by outcome: written, duplicate (written before), unchanged (the value was current), review (filed for review), skipped (no scope), dry_run.",
		}, []string{"outcome"}),
		ConsolidationErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentmem_consolidation_errors_total",
			Help: "Background consolidations (at termination, every N turns, the restart sweep) that failed; the next trigger or the restart sweep retries them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.RefusedReplies, m.Denied, m.Limited, m.AssemblyErrors, m.Forwards, m.ConsolidatedFacts, m.ConsolidationErrors)
	}
	return m
}
