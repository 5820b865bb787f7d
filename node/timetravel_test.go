package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestTimeTravelMatchesWhatWasSent: time travel (the inspector's at.json)
// and `replay inspect --at-seq` give, at every point recorded, the context
// the node answered then — item by item, the same tokens and text — after
// the scope the memory items come from was rewritten: once by an entry
// erase of another key (a ScopeBaseline without it, the older messages
// purged), then by the log-window compaction (another baseline). The
// erased key's item alone is shown as erased, its tokens still counted;
// every header count agrees with the items listed.
//
// Comparing time travel with replay inspect cannot see a defect both
// share (they call the same code), so both are compared with the live
// replies.
func TestTimeTravelMatchesWhatWasSent(t *testing.T) {
	const (
		agent   = "support-bot"
		scope   = "agent:" + agent
		erased  = "scratch"
		session = "s1"
	)
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.HTTPAddr, c.LogWindow = "127.0.0.1:0", 1500*time.Millisecond
	})
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	entries := map[string]string{
		"refund-policy":   "Refunds to a Visa card take 3 to 5 days; a damaged kettle is refunded in full.",
		"kettle-warranty": "The blue kettle carries a two-year warranty against cracks in the glass.",
		"tone":            "Apologize once for a damaged order, then give the refund number and the card.",
		erased:            "Scratch note: order A-1003 refund to the Visa card waits for a kettle photo.",
	}
	for k, v := range entries {
		if _, err := c.Put(ctx, client.Agent(agent), &memoryv1.PutEntryRequest{Key: k, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateSession(ctx, session, &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: agent,
		SystemPrompt: "You are the support agent of Acme. Answer briefly.", MaxContextTokens: 1500, ReservedOutputTokens: 200}); err != nil {
		t.Fatal(err)
	}
	// The live replies, at several points of the session.
	var sent []*memoryv1.ContextReply
	for i := range 10 {
		if _, err := c.AppendMessages(ctx, session,
			userMsg(fmt.Sprintf("Turn %d: my order A-%d arrived damaged, the blue kettle has a crack. Can you refund it to my Visa card?", i, 1000+i)),
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("I am sorry about order A-%d. I opened refund R-%d for 39.90 EUR to your Visa card.", 1000+i, 500+i)}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			cx, err := c.Context(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, cx)
		}
	}
	withErased := 0
	for _, cx := range sent {
		if memoryItem(cx, scope, erased) != nil {
			withErased++
		}
	}
	if withErased == 0 {
		t.Fatalf("setup: no recorded context shows %s/%s in its memory section", scope, erased)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.MetricsAddr()

	rc, err := c.EraseEntry(ctx, client.Agent(agent), erased, "test: a scratch note")
	if err != nil {
		t.Fatal(err)
	}
	// A point after the erase whose sections still name the erased item
	// (no user message since): the node no longer sends it, and time
	// travel leaves it out too.
	if _, err := c.AppendMessages(ctx, session, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "One more thing: keep the receipt of the kettle."}); err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if memoryItem(cx, scope, erased) != nil || cx.GetLayers().GetMemory() == 0 {
		t.Fatalf("setup: the live context after the erase: %s/%s shown %v, memory %d tokens", scope, erased, memoryItem(cx, scope, erased) != nil, cx.GetLayers().GetMemory())
	}
	if !namesItem(t, base, session, cx.GetSeq(), erased) {
		t.Fatalf("setup: the sections at seq %d no longer name %s: the point does not test an item erased before it", cx.GetSeq(), erased)
	}
	sent = append(sent, cx)
	checkTimeTravel(t, ctx, n, base, session, sent, scope, erased, "after the entry erase")

	// A compaction rewrites the scope again (a second baseline): a new
	// message on its subject, then wait for the node's own compaction.
	if _, err := c.Put(ctx, client.Agent(agent), &memoryv1.PutEntryRequest{Key: "later", Value: []byte("written after the erase")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a compaction of "+scope+" after the erase", func() (bool, string) {
		led, err := events.ReadLedger(ctx, l, 0)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range led.Removals {
			if r.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_COMPACT && r.GetTarget() == "scope:"+scope && r.Completed && r.Seq > rc.GetRemovalSeq() {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d removals", len(led.Removals))
	})
	checkTimeTravel(t, ctx, n, base, session, sent, scope, erased, "after the compaction")
}

// checkTimeTravel compares, at each recorded reply's sequence, the
// inspector's at.json and `replay inspect` (JSON and text) with it.
func checkTimeTravel(t *testing.T, ctx context.Context, n *node.Node, base, session string, sent []*memoryv1.ContextReply, scope, erased, when string) {
	t.Helper()
	items, marked := 0, 0
	defer func() {
		t.Logf("%s: %d points, %d memory items compared, %d of them erased", when, len(sent), items, marked)
	}()
	for _, want := range sent {
		at := want.GetSeq()
		for _, m := range want.GetMessages() {
			if m.GetLayer() == "memory" {
				items++
			}
		}
		if memoryItem(want, scope, erased) != nil {
			marked++
		}
		res, err := http.Get(fmt.Sprintf("%s/ui/s/%s/at.json?seq=%d", base, session, at))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s: at.json at seq %d: %d %s", when, at, res.StatusCode, body)
		}
		compareSent(t, fmt.Sprintf("%s: time travel at seq %d", when, at), want, inspectContext(t, body), scope, erased)

		var out bytes.Buffer
		if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{NATSURL: n.ClientURL()}, SessionID: session, AtSeq: at, JSON: true}, &out); err != nil {
			t.Fatalf("%s: replay inspect --json --at-seq %d: %v", when, at, err)
		}
		compareSent(t, fmt.Sprintf("%s: replay inspect at seq %d", when, at), want, inspectContext(t, out.Bytes()), scope, erased)

		out.Reset()
		if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{NATSURL: n.ClientURL()}, SessionID: session, AtSeq: at}, &out); err != nil {
			t.Fatalf("%s: replay inspect --at-seq %d: %v", when, at, err)
		}
		checkInspectText(t, fmt.Sprintf("%s: replay inspect text at seq %d", when, at), want, out.String())
	}
}

// inspectContext decodes the context of {"context": ..., "snapshot": ...}.
func inspectContext(t *testing.T, b []byte) *memoryv1.ContextReply {
	t.Helper()
	var rep struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	cx := &memoryv1.ContextReply{}
	if err := protojson.Unmarshal(rep.Context, cx); err != nil {
		t.Fatal(err)
	}
	return cx
}

// compareSent checks got against the reply the node sent: the same
// layers' tokens and usage, the same messages in order with the same
// tokens and text, but for the erased key's item, which is marked erased
// (its text not shown), keeps its tokens and is named by its key's digest
// (the log no longer holds the key).
func compareSent(t *testing.T, what string, want, got *memoryv1.ContextReply, scope, erased string) {
	t.Helper()
	if got.GetUsage().GetUsed() != want.GetUsage().GetUsed() || got.GetLayers().GetMemory() != want.GetLayers().GetMemory() {
		t.Errorf("%s: used %d, memory %d; the node sent used %d, memory %d", what,
			got.GetUsage().GetUsed(), got.GetLayers().GetMemory(), want.GetUsage().GetUsed(), want.GetLayers().GetMemory())
	}
	if len(got.GetMessages()) != len(want.GetMessages()) {
		t.Errorf("%s: %d messages; the node sent %d", what, len(got.GetMessages()), len(want.GetMessages()))
	}
	erasedID := "memory:" + scope + "/" + erased
	for i, w := range want.GetMessages() {
		if i >= len(got.GetMessages()) {
			break
		}
		g := got.GetMessages()[i]
		wantID := w.GetId()
		if wantID == erasedID {
			sum := sha256.Sum256([]byte(erased))
			wantID = "memory:" + scope + "/#" + hex.EncodeToString(sum[:])[:12]
		}
		if g.GetId() != wantID || g.GetLayer() != w.GetLayer() || g.GetTokens() != w.GetTokens() {
			t.Errorf("%s: message %d is %s %s (%d tokens); the node sent %s %s (%d tokens)", what, i+1,
				g.GetLayer(), g.GetId(), g.GetTokens(), w.GetLayer(), wantID, w.GetTokens())
			return // the lists part here: what follows would only repeat it
		}
		if w.GetId() == erasedID {
			if !strings.Contains(g.GetContent(), "erased") || strings.Contains(g.GetContent(), "A-1003") || strings.Contains(g.GetContent(), erased) {
				t.Errorf("%s: the erased entry's item reads %q, want an erased marker without its text", what, g.GetContent())
			}
			continue
		}
		if g.GetContent() != w.GetContent() {
			t.Errorf("%s: message %d (%s) reads %q; the node sent %q", what, i+1, w.GetId(), g.GetContent(), w.GetContent())
		}
	}
}

var inspectHeader = regexp.MustCompile(`memory (\d+) \((\d+) entries\)`)

// checkInspectText checks the text report's header against the messages
// it lists and against what the node sent.
func checkInspectText(t *testing.T, what string, want *memoryv1.ContextReply, text string) {
	t.Helper()
	m := inspectHeader.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no memory header in\n%s", what, text)
	}
	tokens, _ := strconv.Atoi(m[1])
	entries, _ := strconv.Atoi(m[2])
	listed := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "--- ") && strings.Fields(line)[2] == "memory" {
			listed++
		}
	}
	sentItems := 0
	for _, msg := range want.GetMessages() {
		if msg.GetLayer() == "memory" {
			sentItems++
		}
	}
	if uint32(tokens) != want.GetLayers().GetMemory() || entries != listed || listed != sentItems {
		t.Errorf("%s: header says memory %d (%d entries) and lists %d memory items; the node sent memory %d in %d items",
			what, tokens, entries, listed, want.GetLayers().GetMemory(), sentItems)
	}
}

// namesItem reports whether the session's sections at seq (the snapshot
// at.json gives) hold a memory item of key: by its digest, never the key.
func namesItem(t *testing.T, base, session string, seq uint64, key string) bool {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("%s/ui/s/%s/at.json?seq=%d", base, session, seq))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rep struct {
		Snapshot json.RawMessage `json:"snapshot"`
	}
	if err := json.NewDecoder(res.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	snap := &memoryv1.SessionSnapshot{}
	if err := protojson.Unmarshal(rep.Snapshot, snap); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	for _, m := range snap.GetAssembled().GetMemory() {
		if m.GetKey() != "" {
			t.Errorf("the sections at seq %d name key %s, want its digest alone", seq, m.GetKey())
		}
		if bytes.Equal(m.GetKeySha256(), sum[:]) {
			return true
		}
	}
	return false
}

// memoryItem is the memory section's message of scope's key in cx.
func memoryItem(cx *memoryv1.ContextReply, scope, key string) *memoryv1.ContextMessage {
	for _, m := range cx.GetMessages() {
		if m.GetId() == "memory:"+scope+"/"+key {
			return m
		}
	}
	return nil
}
