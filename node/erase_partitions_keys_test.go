package node_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestErasePartitionsMarker is the marker test of
// TestEraseTakesEntryKeysFromOtherContexts with the log in six
// partitions: consolidation keys an episode of session a by the user's
// words, session b's context shows it; erasing a leaves the words in no
// stream (the six log partitions, b's snapshot, the ledgers), in no read
// of the projection, and b's live context leaves the item out, tokens
// agreeing; /healthz answers 200.
func TestErasePartitionsMarker(t *testing.T) {
	const (
		agent  = "solo"
		scope  = "agent:" + agent
		marker = "wombat"
	)
	n, nc := node.StartForTest(t, func(c *node.Config) {
		partitionedEraseConfig(c)
		c.Actors.IdleTimeout = 300 * time.Millisecond // b's snapshot is written
	})
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := plantEpisode(t, ctx, c, agent, marker)
	if _, err := c.CreateSession(ctx, "b", &memoryv1.CreateSessionRequest{AgentId: agent}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "b", userMsg("Should I try restarting the router once more?")); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	eventually(t, "a snapshot of b holding its sections", func() (bool, string) {
		for _, where := range partitionsHold(t, ctx, js, string(sum[:])) {
			if !strings.HasPrefix(where, events.StreamName+"_P") {
				return true, ""
			}
		}
		return false, "no snapshot stream holds the digest"
	})
	before, err := c.Context(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if item := memoryItem(before, scope, key); item == nil || !strings.Contains(item.GetContent(), marker) {
		t.Fatalf("setup: b's context does not show the episode (the checks below could not fail): %v", before.GetMessages())
	}
	if held := partitionsHold(t, ctx, js, marker); len(held) == 0 {
		t.Fatal("setup: no stream holds the marker")
	}

	if _, err := c.EraseSession(ctx, "a", "forget that conversation"); err != nil {
		t.Fatal(err)
	}
	if held := partitionsHold(t, ctx, js, marker); len(held) > 0 {
		t.Errorf("streams (log partitions, snapshots, ledgers) still hold the erased episode's key: %v", held)
	}
	checkLedgerPerPartition(t, partitionLedgers(t, ctx, partitionedLog(t, js)))
	// The projection: no entry, no search hit.
	if hits, err := c.SearchEntries(ctx, client.Agent(agent), &memoryv1.SearchEntriesRequest{Query: "restarting router " + marker}); err != nil {
		t.Fatal(err)
	} else {
		for _, h := range hits.GetHits() {
			if strings.Contains(h.GetEntry().GetKey(), marker) {
				t.Errorf("the projection still finds the erased episode: %s", h.GetEntry().GetKey())
			}
		}
	}
	if l, err := c.ListEntries(ctx, client.Agent(agent), &memoryv1.ListEntriesRequest{IncludeDeleted: true}); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range l.GetEntries() {
			if strings.Contains(e.GetKey(), marker) {
				t.Errorf("the projection still lists the erased episode: %s", e.GetKey())
			}
		}
	}
	live, err := c.Context(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	noMarker(t, "b's live context after the erase", live, marker)
	if memoryItem(live, scope, key) != nil {
		t.Errorf("b's live context after the erase still shows the episode")
	}
	checkTokens(t, "b's live context after the erase", live)
	base := "http://" + n.MetricsAddr()
	if page := get(t, base+"/ui/s/b"); strings.Contains(page, marker) {
		t.Errorf("the inspector's page of b still holds %q", marker)
	}

	// Time travel (the inspector's at.json) at the point b's context was
	// sent: the item stays, with its tokens, marked erased (a's removals
	// are in other streams than b's: placed by the time they were stored).
	id := "memory:" + scope + "/" + key
	past := pastContextAt(t, base, "b", before.GetSeq(), marker)
	noMarker(t, "time travel before the erase", past, marker)
	checkTokens(t, "time travel before the erase", past)
	if past.GetUsage().GetUsed() != before.GetUsage().GetUsed() || len(past.GetMessages()) != len(before.GetMessages()) {
		t.Errorf("time travel: used %d in %d messages; the node sent %d in %d", past.GetUsage().GetUsed(), len(past.GetMessages()),
			before.GetUsage().GetUsed(), len(before.GetMessages()))
	} else {
		for i, m := range past.GetMessages() {
			want := before.GetMessages()[i]
			switch {
			case strings.HasPrefix(want.GetId(), "recalled:a/"):
				if !strings.HasPrefix(m.GetContent(), "[erased]") {
					t.Errorf("time travel: a's recalled message reads %q, want marked erased", m.GetContent())
				}
			case want.GetId() == id:
				if !strings.HasPrefix(m.GetContent(), "[erased]") || m.GetTokens() != want.GetTokens() {
					t.Errorf("time travel: the erased item reads %q (%d tokens), want marked erased with %d tokens", m.GetContent(), m.GetTokens(), want.GetTokens())
				}
			case m.GetId() != want.GetId() || m.GetContent() != want.GetContent():
				t.Errorf("time travel: message %d is %s %q; the node sent %s %q", i, m.GetId(), m.GetContent(), want.GetId(), want.GetContent())
			}
		}
	}
	// A point after the erase: the item left out, as the node leaves it.
	rep, err := c.AppendMessages(ctx, "b", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Try unplugging it for a minute."})
	if err != nil {
		t.Fatal(err)
	}
	after := pastContextAt(t, base, "b", rep.GetResult().GetSeq(), marker)
	noMarker(t, "time travel after the erase", after, marker)
	checkTokens(t, "time travel after the erase", after)
	for _, m := range after.GetMessages() {
		if m.GetLayer() == "memory" && strings.Contains(m.GetContent(), "[erased]") {
			t.Errorf("time travel after the erase lists the item (%q), want it left out", m.GetContent())
		}
	}
	waitHealthy(t, base, 30*time.Second)
}

// pastContextAt is session's context at seq through the inspector's time
// travel (at.json), which must not hold marker.
func pastContextAt(t *testing.T, base, session string, seq uint64, marker string) *memoryv1.ContextReply {
	t.Helper()
	body := get(t, fmt.Sprintf("%s/ui/s/%s/at.json?seq=%d", base, session, seq))
	if strings.Contains(body, marker) {
		t.Errorf("time travel at seq %d holds %q", seq, marker)
	}
	return inspectContext(t, []byte(body))
}
