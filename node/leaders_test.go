package node

import (
	"fmt"
	"testing"
)

// planLeaderMoves brings every server to at most ceil(streams/servers)
// leaders, moving a stream only to one of its replicas, and moves nothing
// when the leaders are spread already.
func TestPlanLeaderMoves(t *testing.T) {
	all := []string{"s1", "s2", "s3"}
	leads := func(leaders ...string) []streamLead {
		var out []streamLead
		for i, l := range leaders {
			out = append(out, streamLead{name: fmt.Sprintf("P%d", i), leader: l, peers: all})
		}
		return out
	}
	count := func(ls []streamLead, moves []leaderMove) map[string]int {
		at := map[string]string{}
		for _, l := range ls {
			at[l.name] = l.leader
		}
		for _, m := range moves {
			at[m.stream] = m.to
		}
		c := map[string]int{}
		for _, s := range at {
			c[s]++
		}
		return c
	}
	for _, tc := range []struct {
		leaders []string
		moves   int
	}{
		{[]string{"s1", "s1", "s1", "s1", "s1", "s1"}, 4},
		{[]string{"s1", "s3", "s2", "s3", "s3", "s2"}, 1},
		{[]string{"s1", "s2", "s3", "s1", "s2", "s3"}, 0},
		{[]string{"s1", "s1", "s1", "s1", "s2", "s3", "s3"}, 1},
	} {
		ls := leads(tc.leaders...)
		moves := planLeaderMoves(ls)
		if len(moves) != tc.moves {
			t.Errorf("%v: %d moves %v, want %d", tc.leaders, len(moves), moves, tc.moves)
		}
		fair := (len(ls) + 2) / 3
		for s, n := range count(ls, moves) {
			if n > fair {
				t.Errorf("%v: after %v %s leads %d, more than %d", tc.leaders, moves, s, n, fair)
			}
		}
	}
	// A stream moves only to its own replicas (here none is free).
	ls := []streamLead{{name: "P0", leader: "s1", peers: []string{"s1"}}, {name: "P1", leader: "s1", peers: []string{"s1"}},
		{name: "P2", leader: "s2", peers: []string{"s2", "s3"}}}
	if moves := planLeaderMoves(ls); len(moves) != 0 {
		t.Errorf("moves to servers without a replica: %v", moves)
	}
}
