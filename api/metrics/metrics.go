// Package metrics are the memory service's Prometheus instruments: the
// requests answered by operation and code class whatever their transport,
// the refusals by family and limit, forwards, the context assembler's
// candidates and consolidation's outcomes.
package metrics

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the service's Prometheus instruments.
type Metrics struct {
	// RefusedReplies counts requests dropped because their reply subject is
	// not an inbox (natsapi.replyAllowed).
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
	// Requests counts answered requests and Latency times them (from the
	// request's arrival to its reply), by operation (the endpoint's name,
	// session_append) and code class (2xx, 4xx, 5xx), whatever the
	// transport (NATS or HTTP).
	Requests *prometheus.CounterVec
	Latency  *prometheus.HistogramVec
	// Candidates observes how many candidates the context assembler offered
	// an append, by part (recall: earlier messages; memory: scope entries);
	// an append whose part was not searched is not observed for it.
	Candidates *prometheus.HistogramVec
	// ConsolidatedFacts counts the facts consolidation extracted, by
	// outcome (written, duplicate, unchanged, review, skipped, dry_run);
	// ConsolidationErrors the background consolidations that failed.
	ConsolidatedFacts   *prometheus.CounterVec
	ConsolidationErrors prometheus.Counter
}

// New creates the instruments and registers them on reg (nil = not
// registered).
func New(reg prometheus.Registerer) *Metrics {
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
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentmem_api_requests_total",
			Help: "Requests answered, by operation (the endpoint's name: session_append, agent_put, …; unknown for an unknown operation) and code class (2xx, 4xx, 5xx), over NATS and HTTP alike. A request forwarded to the node that serves its aggregate is counted on the node it reached.",
		}, []string{"operation", "code"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_api_request_seconds",
			Help:    "Time from a request's arrival to its reply, by operation and code class (watch long polls include their wait).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation", "code"}),
		Candidates: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentmem_api_assembly_candidates",
			Help:    "Candidates the context assembler offered an append's session actor, by part: recall (earlier messages found by the swap search, after OfferRecall) and memory (scope entries); appends that did not search a part are not observed for it.",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100},
		}, []string{"part"}),
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
		reg.MustRegister(m.RefusedReplies, m.Denied, m.Limited, m.AssemblyErrors, m.Forwards, m.Requests, m.Latency, m.Candidates,
			m.ConsolidatedFacts, m.ConsolidationErrors)
	}
	return m
}

// Observe counts one answered request of operation op that arrived at
// start; hdr is its reply's headers (an error code names the class).
func (m *Metrics) Observe(op string, start time.Time, hdr nats.Header) {
	class := "2xx"
	if c, err := strconv.Atoi(hdr.Get(micro.ErrorCodeHeader)); err == nil && c >= 100 {
		class = strconv.Itoa(c/100) + "xx"
	}
	m.Requests.WithLabelValues(op, class).Inc()
	m.Latency.WithLabelValues(op, class).Observe(time.Since(start).Seconds())
}
