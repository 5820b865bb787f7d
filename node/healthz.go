package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem/api/consistency"
)

// healthReport is the body of /healthz.
type healthReport struct {
	// Status is "ok", "degraded", "unavailable" or "starting" (HTTP 200,
	// 200, 503, 503). Degraded: only log_partitions or placement fail,
	// the node still serves: some of the log's partition streams have no
	// quorum and the others take writes, or the placement bucket has no
	// quorum and this node serves the partitions it held; 200, because
	// every node shares the streams and the bucket (taking this node out
	// of a load balancer moves nothing to a working partition), and the
	// requests that cannot be served are answered 503 at once. Placement
	// without quorum while this node serves no partition is unavailable.
	Status string `json:"status"`
	// Waiting is what a starting node waits for (its NATS cluster to
	// take a stream or bucket, with the last attempt's error); only with
	// status "starting", which carries nothing else.
	Waiting string `json:"waiting,omitempty"`
	// Failing names the parts that are not ok: log, jetstream, projector,
	// placement, log_partitions.
	Failing   []string `json:"failing,omitempty"`
	Log       *part    `json:"log,omitempty"`
	JetStream *part    `json:"jetstream,omitempty"`
	// Placement is the placement bucket's quorum (with a replicated log
	// only: absent otherwise). Without it no node can take a partition:
	// each keeps serving those it held, the others are answered 503.
	Placement *part `json:"placement,omitempty"`
	// LogPartitions are, with the log in K > 1 partitions, the partitions
	// whose stream alone has no quorum (absent: none, or none has).
	LogPartitions []partitionPart `json:"log_partitions,omitempty"`
	// Projector and AppliedSeq are absent without a projector (with one,
	// applied_seq is there from the start: 0 on a fresh node).
	Projector  *part   `json:"projector,omitempty"`
	AppliedSeq *uint64 `json:"applied_seq,omitempty"`
	// Applied is, with the log in K > 1 partitions, each partition's
	// checkpoint as a consistency token list (k<K>:p<i>:<seq>, partitions
	// the projection applied nothing of left out): applied_seq, the least
	// of them, stays 0 while any partition is empty. A read given it as
	// `consistency` waits for this node's projection as it is now.
	Applied string `json:"applied,omitempty"`
	// ProjectionPartitions is, with split projections
	// (--projection-partitions), the corpus partitions this node answers
	// and those it is catching up on (each file reads the whole log, and
	// answers once it reached the log's end as it was when taken).
	ProjectionPartitions *splitPart `json:"projection_partitions,omitempty"`
	// DiskFreeBytes is the free space under the data dir (absent: unknown).
	DiskFreeBytes *int64 `json:"disk_free_bytes,omitempty"`
}

// health is the node's current health, from the storage watch and the log
// stream check.
// A node still starting reports only what it waits for.
func (n *Node) health() healthReport {
	if waiting, starting := n.startingFor(); starting {
		return healthReport{Status: "starting", Waiting: waiting}
	}
	st := n.storage.State()
	r := healthReport{Status: "ok", Log: &st.Log, JetStream: &st.JetStream, LogPartitions: st.Lost}
	serving := true // the node serves despite the placement bucket's state
	if n.storage.bucket != "" {
		p := st.Placement
		if !p.OK && n.placement != nil {
			// Served counts the partitions kept past their leases only
			// while the log's stream has its quorum (openPlacement).
			served := n.placement.Served()
			serving = served > 0
			p.Detail += fmt.Sprintf("; this node serves %d partitions", served)
		}
		r.Placement = &p
	}
	if r.Log.OK && n.logHealth != nil {
		if p := n.logHealth.Problem(); p != "" {
			f := fault("stream", p)
			r.Log = &f
		}
	}
	if n.proj != nil {
		p := st.Projector
		r.Projector = &p
		r.AppliedSeq, r.Applied = appliedReport(n.proj)
	}
	if n.split != nil {
		r.ProjectionPartitions = n.split.health()
		r.AppliedSeq, r.Applied = appliedReport(n.splitRM)
	}
	if st.FreeBytes >= 0 {
		free := st.FreeBytes
		r.DiskFreeBytes = &free
	}
	for _, c := range []struct {
		name string
		p    *part
	}{{"log", r.Log}, {"jetstream", r.JetStream}, {"projector", r.Projector}} {
		if c.p != nil && !c.p.OK {
			r.Failing = append(r.Failing, c.name)
		}
	}
	placementOut := r.Placement != nil && !r.Placement.OK
	switch {
	case len(r.Failing) > 0 || (placementOut && !serving):
		r.Status = "unavailable"
	case len(r.LogPartitions) > 0 || placementOut:
		r.Status = "degraded"
		if len(r.LogPartitions) > 0 {
			r.Failing = []string{"log_partitions"}
		}
	}
	if placementOut {
		r.Failing = append(r.Failing, "placement")
	}
	return r
}

// serveHealthz answers /healthz: 200 and the report while every part is
// ok or only some log partitions are unavailable (degraded), 503 and the
// report naming the failing parts otherwise.
func (n *Node) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	n.writeHealth(w, n.health())
}

// writeHealth writes r: 200 when ok or degraded, 503 otherwise.
func (n *Node) writeHealth(w http.ResponseWriter, r healthReport) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.Status != "ok" && r.Status != "degraded" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(r)
}

// Healthy reports whether every part is ok, and the failing parts
// (log_partitions when degraded).
func (n *Node) Healthy() (bool, []string) {
	r := n.health()
	if r.Status == "starting" {
		return false, []string{"starting"}
	}
	return r.Status == "ok", r.Failing
}

// appliedPositions is what /healthz reads of a projection's position.
type appliedPositions interface {
	Partitions() int
	AppliedSeq() uint64
	AppliedSeqOf(part int) uint64
}

// appliedReport is /healthz's applied_seq and, with the log in K > 1
// partitions, its applied token list (partitions applied nothing of left
// out).
func appliedReport(p appliedPositions) (*uint64, string) {
	least, k := p.AppliedSeq(), p.Partitions()
	var tokens []string
	for i := range k {
		if seq := p.AppliedSeqOf(i); seq > 0 && k > 1 {
			tokens = append(tokens, consistency.Format(k, i, seq))
		}
	}
	return &least, strings.Join(tokens, ",")
}
