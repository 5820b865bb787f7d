package replay

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/placement"
)

// writeCluster writes the nodes (heartbeat age, partitions held, projection
// lag) and who holds which partition.
// A node's applied sequence is its least checkpoint with the log in
// partitions, which no one stream's last sequence is comparable with: its
// lag is then "?".
func (rep *StatsReport) writeCluster(b *strings.Builder) {
	c := rep.Cluster
	var logLast uint64
	for _, s := range rep.Streams {
		if len(rep.LogStreams) == 1 && s.Name == rep.LogStreams[0] {
			logLast = s.LastSeq
		}
	}
	parts := 0
	slices.SortFunc(c.Nodes, func(x, y placement.NodeInfo) int { return strings.Compare(x.ID, y.ID) })
	for _, n := range c.Nodes {
		parts = max(parts, n.Partitions)
	}
	fmt.Fprintf(b, "cluster: %d live nodes, %d of %d partitions leased (lease %s)\n", len(c.Nodes), len(c.Leases), parts, c.TTL)
	owned := map[string][]int{}
	oldest := map[string]time.Duration{}
	held := map[int]bool{}
	for _, l := range c.Leases {
		owned[l.Owner] = append(owned[l.Owner], l.Partition)
		oldest[l.Owner] = max(oldest[l.Owner], l.Age)
		held[l.Partition] = true
	}
	for _, n := range c.Nodes {
		lag := "?"
		if len(rep.LogStreams) == 1 && logLast >= n.AppliedSeq {
			lag = fmt.Sprint(logLast - n.AppliedSeq)
		}
		fmt.Fprintf(b, "  node %s: %d partitions, heartbeat %s ago, up %s, projection applied seq %d (lag %s)\n",
			n.ID, len(owned[n.ID]), time.Since(n.Updated).Round(time.Millisecond), time.Since(n.Started).Round(time.Second), n.AppliedSeq, lag)
	}
	owners := make([]string, 0, len(owned))
	for o := range owned {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, o := range owners {
		ps := owned[o]
		slices.Sort(ps)
		fmt.Fprintf(b, "  partitions of %s (oldest lease write %s ago): %v\n", o, oldest[o].Round(time.Millisecond), ps)
	}
	var free []int
	for p := range parts {
		if !held[p] {
			free = append(free, p)
		}
	}
	if len(free) > 0 {
		fmt.Fprintf(b, "  unowned partitions (their aggregates wait for a node): %v\n", free)
	}
}
