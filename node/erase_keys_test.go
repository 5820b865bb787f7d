package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestEraseTakesEntryKeysFromOtherContexts: consolidation keys an episode
// by the user's words; another session of the same agent shows that
// episode in its context. Erasing the first session erases the episode,
// and then no message of the log (the other session's ContextAssembled,
// the removal ledger, any subject) holds those words: a context records
// its memory items by the key's digest. The other session's context
// leaves the item out live, and time travel shows it as erased, keeping
// its tokens, or leaves it out after the erase, the counts agreeing with
// the items listed.
func TestEraseTakesEntryKeysFromOtherContexts(t *testing.T) {
	const (
		agent  = "solo"
		scope  = "agent:" + agent
		marker = "wombat"
	)
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		// An idle actor is passivated, and its snapshot written: b's
		// snapshot holds its sections.
		c.Actors.IdleTimeout = 300 * time.Millisecond
	})
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := plantEpisode(t, ctx, c, agent, marker)
	id := "memory:" + scope + "/" + key

	// Session b of the same agent: its user message (without the marker)
	// makes its context show a's episode.
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
	// b's snapshot holds its sections (the episode's item by digest): the
	// check of every stream below then covers a snapshot that showed it.
	sum := sha256.Sum256([]byte(key))
	eventually(t, "a snapshot of b holding its sections", func() (bool, string) {
		for _, where := range streamsHold(t, ctx, js, string(sum[:])) {
			if !strings.HasPrefix(where, events.StreamName+" ") {
				return true, ""
			}
		}
		return false, "no snapshot stream holds the digest"
	})
	before, err := c.Context(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	item := memoryItem(before, scope, key)
	if item == nil || !strings.Contains(item.GetContent(), marker) {
		t.Fatalf("setup: b's context does not show %s (the checks below could not fail): %v", id, before.GetMessages())
	}
	checkTokens(t, "b's context before the erase", before)
	base := "http://" + n.MetricsAddr()
	if page := get(t, base+"/ui/s/b"); !strings.Contains(page, key) {
		t.Fatalf("setup: the inspector's page of b does not name %s", key)
	}

	if _, err := c.EraseSession(ctx, "a", "forget that conversation"); err != nil {
		t.Fatal(err)
	}
	if subs := (&eraseFixture{js: js}).logHolds(t, marker); len(subs) > 0 {
		t.Errorf("log messages still hold the erased episode's key: %v", subs)
	}
	if held := streamsHold(t, ctx, js, marker); len(held) > 0 {
		t.Errorf("stream messages (snapshots included) still hold the erased episode's key: %v", held)
	}

	// Live: left out, its tokens with it.
	live, err := c.Context(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	noMarker(t, "b's live context after the erase", live, marker)
	fromA := 1 // the episode, and the recalled messages of session a
	for _, m := range before.GetMessages() {
		if strings.HasPrefix(m.GetId(), "recalled:a/") {
			fromA++
		}
	}
	if memoryItem(live, scope, key) != nil || len(live.GetMessages()) != len(before.GetMessages())-fromA {
		t.Errorf("b's live context after the erase: %d messages (%d before, %d of them from a), want the episode's item left out",
			len(live.GetMessages()), len(before.GetMessages()), fromA)
	}
	checkTokens(t, "b's live context after the erase", live)
	if page := get(t, base+"/ui/s/b"); strings.Contains(page, marker) {
		t.Errorf("the inspector's page of b still holds %q", marker)
	}

	// Time travel at the point b's context was sent: the item stays, with
	// its tokens, marked erased.
	for what, past := range pastContexts(t, ctx, n, base, "b", before.GetSeq()) {
		noMarker(t, what, past, marker)
		checkTokens(t, what, past)
		if past.GetUsage().GetUsed() != before.GetUsage().GetUsed() || len(past.GetMessages()) != len(before.GetMessages()) {
			t.Errorf("%s: used %d in %d messages; the node sent %d in %d", what, past.GetUsage().GetUsed(), len(past.GetMessages()),
				before.GetUsage().GetUsed(), len(before.GetMessages()))
			continue
		}
		for i, m := range past.GetMessages() {
			want := before.GetMessages()[i]
			if strings.HasPrefix(want.GetId(), "recalled:a/") {
				if !strings.HasPrefix(m.GetContent(), "[erased]") {
					t.Errorf("%s: a's recalled message reads %q, want marked erased", what, m.GetContent())
				}
			} else if want.GetId() == id {
				if !strings.HasPrefix(m.GetContent(), "[erased]") || m.GetTokens() != want.GetTokens() {
					t.Errorf("%s: the erased item reads %q (%d tokens), want marked erased with %d tokens", what, m.GetContent(), m.GetTokens(), want.GetTokens())
				}
			} else if m.GetId() != want.GetId() || m.GetContent() != want.GetContent() {
				t.Errorf("%s: message %d is %s %q; the node sent %s %q", what, i, m.GetId(), m.GetContent(), want.GetId(), want.GetContent())
			}
		}
	}
	var text bytes.Buffer
	if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{NATSURL: n.ClientURL()}, SessionID: "b", AtSeq: before.GetSeq()}, &text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), marker) || !strings.Contains(text.String(), "[erased]") {
		t.Errorf("replay inspect (text) at seq %d: want the item marked erased, without %q:\n%s", before.GetSeq(), marker, text.String())
	}
	checkInspectText(t, "replay inspect (text)", before, text.String())

	// A point after the erase (no user message since: the sections still
	// name the item): left out, as the node leaves it out.
	rep, err := c.AppendMessages(ctx, "b", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Try unplugging it for a minute."})
	if err != nil {
		t.Fatal(err)
	}
	for what, past := range pastContexts(t, ctx, n, base, "b", rep.GetResult().GetSeq()) {
		noMarker(t, what, past, marker)
		checkTokens(t, what, past)
		for _, m := range past.GetMessages() {
			if m.GetLayer() == "memory" && strings.Contains(m.GetContent(), "[erased]") {
				t.Errorf("%s: after the erase the item is listed (%q), want it left out", what, m.GetContent())
			}
		}
	}
}

// pastContexts is session's context at seq through time travel: the
// inspector's at.json and `replay inspect --json`.
func pastContexts(t *testing.T, ctx context.Context, n *node.Node, base, session string, seq uint64) map[string]*memoryv1.ContextReply {
	t.Helper()
	body := get(t, fmt.Sprintf("%s/ui/s/%s/at.json?seq=%d", base, session, seq))
	var out bytes.Buffer
	if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{NATSURL: n.ClientURL()}, SessionID: session, AtSeq: seq, JSON: true}, &out); err != nil {
		t.Fatalf("replay inspect --json --at-seq %d: %v", seq, err)
	}
	if strings.Contains(body, "wombat") || strings.Contains(out.String(), "wombat") {
		t.Errorf("time travel at seq %d holds the erased key (at.json %v, replay inspect %v)", seq,
			strings.Contains(body, "wombat"), strings.Contains(out.String(), "wombat"))
	}
	return map[string]*memoryv1.ContextReply{
		fmt.Sprintf("time travel at seq %d", seq):    inspectContext(t, []byte(body)),
		fmt.Sprintf("replay inspect at seq %d", seq): inspectContext(t, out.Bytes()),
	}
}

// checkTokens checks that cx's memory layer and usage are the sums of the
// tokens of the messages it lists.
func checkTokens(t *testing.T, what string, cx *memoryv1.ContextReply) {
	t.Helper()
	var memory, used uint32
	for _, m := range cx.GetMessages() {
		used += m.GetTokens()
		if m.GetLayer() == "memory" {
			memory += m.GetTokens()
		}
	}
	if memory != cx.GetLayers().GetMemory() || used != cx.GetUsage().GetUsed() {
		t.Errorf("%s: the messages take %d tokens, %d of them memory; the header says used %d, memory %d",
			what, used, memory, cx.GetUsage().GetUsed(), cx.GetLayers().GetMemory())
	}
}

// noMarker fails when a message of cx holds marker (id or text).
func noMarker(t *testing.T, what string, cx *memoryv1.ContextReply, marker string) {
	t.Helper()
	for _, m := range cx.GetMessages() {
		if strings.Contains(m.GetId(), marker) || strings.Contains(m.GetContent(), marker) {
			t.Errorf("%s: message %s reads %q", what, m.GetId(), m.GetContent())
		}
	}
}

// streamsHold returns the stream and subject of every message of every
// stream (the log, the snapshots' bucket, ...) whose bytes hold marker.
func streamsHold(t *testing.T, ctx context.Context, js jetstream.JetStream, marker string) []string {
	t.Helper()
	var out []string
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				continue // removed
			}
			if bytes.Contains(m.Data, []byte(marker)) {
				out = append(out, name+" "+m.Subject)
			}
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// get returns the body of a 200 answer to GET url.
func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	return string(body)
}

// plantEpisode makes session a of agent say marker and consolidates it,
// and returns the key of the episode entry that holds marker once the
// projection has it.
func plantEpisode(t *testing.T, ctx context.Context, c *client.Client, agent, marker string) string {
	t.Helper()
	if _, err := c.CreateSession(ctx, "a", &memoryv1.CreateSessionRequest{AgentId: agent}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "a", userMsg("I tried restarting the "+marker+" router, but it didn't help.")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Consolidate(ctx, "a", false); err != nil {
		t.Fatalf("consolidate a: %v", err)
	}
	var key string
	eventually(t, "the episode of a in the projection", func() (bool, string) {
		hits, err := c.SearchEntries(ctx, client.Agent(agent), &memoryv1.SearchEntriesRequest{Query: "restarting router"})
		if err != nil {
			return false, err.Error()
		}
		for _, h := range hits.GetHits() {
			if strings.Contains(h.GetEntry().GetKey(), marker) {
				key = h.GetEntry().GetKey()
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d hits", len(hits.GetHits()))
	})
	return key
}
