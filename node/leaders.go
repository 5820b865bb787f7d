package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderSpreadInterval is how often a node checks that the log streams'
// leaders are spread over the NATS servers.
const leaderSpreadInterval = 5 * time.Second

// spreadLeaders keeps the leaders of the log's partition streams spread
// over the NATS servers. JetStream elects each stream's leader itself and
// nothing keeps them apart: six streams may all be led by one server, and
// then its Raft leader takes every write again, which is what the
// partitions are for. Every interval the node reads the streams' leaders
// and, for each stream led by a server leading more than its share
// (ceil(K / servers), the servers being those holding a replica and
// online), asks the leader to step down in favour of the replica leading
// fewest (ties by name). Every node decides the same from the same view,
// so two nodes ask the same move; the second is refused ("already
// leader"). A stream without a leader or with one replica is left alone.
func spreadLeaders(nc *nats.Conn, js jetstream.JetStream, streams []string, logger *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			moved, err := spreadLeadersOnce(ctx, nc, js, streams)
			if err != nil && ctx.Err() == nil {
				logger.Debug("spreading the log streams' leaders", "err", err)
			}
			if moved > 0 {
				logger.Info("log stream leaders moved to spread them over the servers", "moved", moved)
			}
			t.Reset(leaderSpreadInterval)
		}
	}
}

// streamLead is one stream's leader and its online, current replicas.
type streamLead struct {
	name, leader string
	peers        []string
}

// spreadLeadersOnce does one round of spreadLeaders and returns how many
// stepdowns were accepted.
func spreadLeadersOnce(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, streams []string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var leads []streamLead
	for _, name := range streams {
		st, err := js.Stream(ctx, name)
		if err != nil {
			return 0, err
		}
		ci := st.CachedInfo().Cluster
		if ci == nil || ci.Leader == "" || len(ci.Replicas) == 0 {
			return 0, nil // no leader yet, or one replica: nothing to move
		}
		l := streamLead{name: name, leader: ci.Leader}
		for _, r := range ci.Replicas {
			if r.Current && !r.Offline {
				l.peers = append(l.peers, r.Name)
			}
		}
		leads = append(leads, l)
	}
	moves := planLeaderMoves(leads)
	done := 0
	for _, m := range moves {
		body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": m.to}})
		msg, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+m.stream, body)
		if err != nil {
			return done, fmt.Errorf("stepdown of %s to %s: %w", m.stream, m.to, err)
		}
		var resp struct {
			Success bool `json:"success"`
			Error   *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return done, fmt.Errorf("stepdown of %s: %w", m.stream, err)
		}
		if !resp.Success {
			if resp.Error != nil {
				return done, fmt.Errorf("stepdown of %s to %s: %s", m.stream, m.to, resp.Error.Description)
			}
			return done, fmt.Errorf("stepdown of %s to %s refused", m.stream, m.to)
		}
		done++
	}
	return done, nil
}

// leaderMove asks stream's leader to hand over to server to.
type leaderMove struct{ stream, to string }

// planLeaderMoves returns the stepdowns that bring every server to at most
// ceil(streams / servers) leaders, as far as each stream's replicas allow.
func planLeaderMoves(leads []streamLead) []leaderMove {
	count := map[string]int{}
	for _, l := range leads {
		count[l.leader] += 0
		for _, p := range l.peers {
			count[p] += 0
		}
	}
	for _, l := range leads {
		count[l.leader]++
	}
	if len(count) == 0 {
		return nil
	}
	fair := (len(leads) + len(count) - 1) / len(count)
	var moves []leaderMove
	for _, l := range leads {
		if count[l.leader] <= fair {
			continue
		}
		peers := slices.Clone(l.peers)
		slices.Sort(peers)
		best := ""
		for _, p := range peers {
			if p != l.leader && count[p] < fair && (best == "" || count[p] < count[best]) {
				best = p
			}
		}
		if best == "" {
			continue
		}
		count[l.leader]--
		count[best]++
		moves = append(moves, leaderMove{stream: l.name, to: best})
	}
	return moves
}
