package node_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// said is 8 May 2023, 13:56 UTC: the imported sitting's date.
var said = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

// sitting creates session id of user and agent, appends turns (user,
// assistant, …) said at at, and terminates it.
func sitting(t *testing.T, ctx context.Context, c *client.Client, id, user, agent string, at time.Time, turns ...string) {
	t.Helper()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: agent, MaxContextTokens: 4000, ReservedOutputTokens: 500}); err != nil {
		t.Fatal(err)
	}
	var in []*memoryv1.MessageInput
	for i, text := range turns {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		in = append(in, &memoryv1.MessageInput{Role: role, Content: text, SaidUnixNano: at.Add(time.Duration(i) * time.Minute).UnixNano()})
	}
	if _, err := c.AppendMessages(ctx, id, in...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetStatus(ctx, id, memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "sitting over"); err != nil {
		t.Fatal(err)
	}
}

// ask appends q as a user message of session id and returns the context.
func ask(t *testing.T, ctx context.Context, c *client.Client, id, q string) *memoryv1.ContextReply {
	t.Helper()
	if _, err := c.AppendMessages(ctx, id, userMsg(q)); err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return cx
}

// recalledHolding returns the recalled messages of cx whose text holds s.
func recalledHolding(cx *memoryv1.ContextReply, s string) []*memoryv1.ContextMessage {
	var out []*memoryv1.ContextMessage
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == "recalled" && strings.Contains(m.GetContent(), s) {
			out = append(out, m)
		}
	}
	return out
}

// TestCrossSessionRecall: a returning user's new session recalls, at its
// first message, what the user said in an earlier session, with its day
// and its sitting, by reference; never another user's sessions through a
// shared agent; not when the session turns it off; and once the source
// session is erased, no live context holds it and time travel marks it
// erased.
func TestCrossSessionRecall(t *testing.T) {
	n, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.HTTPAddr = "127.0.0.1:0" })
	c := client.New(nc)
	ctx := context.Background()
	const marker = "Tromsø"
	sitting(t, ctx, c, "u1-a", "u1", "shared-agent", said,
		"My sister Priya moved to "+marker+" last week to study glaciers.", "That sounds like an adventure for her!")
	// Another user of the same agent: never reachable from u1's sessions.
	sitting(t, ctx, c, "u2-a", "u2", "shared-agent", said,
		"My cousin Bartholomew keeps bees in Ghent.", "Bees in Ghent, lovely.")

	if _, err := c.CreateSession(ctx, "u1-b", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "shared-agent", MaxContextTokens: 4000, ReservedOutputTokens: 500}); err != nil {
		t.Fatal(err)
	}
	cx := ask(t, ctx, c, "u1-b", "Where did my sister Priya move to?")
	got := recalledHolding(cx, marker)
	if len(got) != 1 {
		t.Fatalf("the new session's context recalls %d messages holding %q, want 1:\n%s", len(got), marker, protojson.Format(cx))
	}
	if !strings.HasPrefix(got[0].GetContent(), "[2023-05-08 earlier session, user] ") {
		t.Errorf("the recalled message does not carry its day and sitting: %q", got[0].GetContent())
	}
	if got[0].GetSaidUnixNano() != said.UnixNano() {
		t.Errorf("said_unix_nano = %d, want %d", got[0].GetSaidUnixNano(), said.UnixNano())
	}
	if got[0].GetRecalled() != nil {
		t.Error("the reply carries the internal reference")
	}
	seqWithItem := cx.GetSeq()
	// Replayed, the context is the one the node sent, byte for byte.
	var past memoryv1.ContextReply
	if err := protojson.Unmarshal([]byte(timeTravel(t, n, "u1-b", seqWithItem)), &past); err != nil {
		t.Fatal(err)
	}
	if a, b := mustMarshal(t, &memoryv1.ContextReply{Messages: past.GetMessages(), Usage: past.GetUsage(), Layers: past.GetLayers()}),
		mustMarshal(t, &memoryv1.ContextReply{Messages: cx.GetMessages(), Usage: cx.GetUsage(), Layers: cx.GetLayers()}); a != b {
		t.Fatalf("time travel to seq %d differs from the context the node sent:\n%s\nlive:\n%s", seqWithItem, a, b)
	}

	// Attack row: u2's history through the shared agent.
	cx = ask(t, ctx, c, "u1-b", "Who keeps bees in Ghent? Bartholomew?")
	if s := protojson.Format(cx); strings.Contains(s, "cousin Bartholomew") {
		t.Fatalf("u1's session recalls u2's session through their shared agent:\n%s", s)
	}

	// Off per session.
	if _, err := c.CreateSession(ctx, "u1-off", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "shared-agent", MaxContextTokens: 4000, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, NoCrossSession: true}}); err != nil {
		t.Fatal(err)
	}
	if cx := ask(t, ctx, c, "u1-off", "Where did my sister Priya move to?"); len(recalledHolding(cx, marker)) != 0 {
		t.Fatal("a session with no_cross_session recalls an earlier session")
	}

	// The log records a reference, not the text: erase the source.
	if _, err := c.EraseSession(ctx, "u1-a", "test"); err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, "u1-b")
	if err != nil {
		t.Fatal(err)
	}
	if s := protojson.Format(cx); strings.Contains(s, marker) {
		t.Fatalf("after the source session's erase, the context still holds its text:\n%s", s)
	}
	at := timeTravel(t, n, "u1-b", seqWithItem)
	if strings.Contains(at, marker) {
		t.Fatalf("time travel to seq %d still holds the erased text:\n%s", seqWithItem, at)
	}
	if !strings.Contains(at, "[erased]") {
		t.Fatalf("time travel to seq %d does not mark the erased recalled item:\n%s", seqWithItem, at)
	}
}

func mustMarshal(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// timeTravel returns the context of session id at seq as the inspector's
// time travel gives it (JSON).
func timeTravel(t *testing.T, n *node.Node, id string, seq uint64) string {
	t.Helper()
	h := n.Inspector()
	if h == nil {
		t.Fatal("no inspector: the node has no HTTP listener")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/ui/s/"+id+"/at.json?seq="+strconv.FormatUint(seq, 10), nil)
	req.Host, req.RemoteAddr = "127.0.0.1", "127.0.0.1:40000"
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("time travel: %d %s", rec.Code, rec.Body.String())
	}
	var out struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return string(out.Context)
}
