package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestUnknownOperation: a typo in the operation under a known prefix
// answers 404 naming the valid operations, not "no responders".
func TestUnknownOperation(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	cases := []struct{ subject, names string }{
		{"mem.v1.session.s1.apend", "append"},
		{"mem.v1.sessions.lst", "list"},
		{"mem.v1.agent.a1.gett", "put"},
		{"mem.v1.scope.team.t1.pub", "publish"},
		{"mem.v1.data.fetch", "get"},
	}
	for _, tc := range cases {
		for _, asJSON := range []bool{false, true} {
			code, desc, body := rawRequest(t, nc, tc.subject, nil, asJSON)
			if code != "404" || !strings.HasPrefix(desc, "operation: ") || !strings.Contains(desc, tc.names) {
				t.Fatalf("%s (json %v): %s %q, want 404 naming the operations", tc.subject, asJSON, code, desc)
			}
			if asJSON && !json.Valid(body) {
				t.Fatalf("%s: JSON error body %s", tc.subject, body)
			}
		}
	}
}

// TestCatchAllHandlesOnce: the catch-all shares the endpoints' queue group,
// so each request is answered exactly once, by its endpoint or by the
// catch-all handing it on (which the endpoint statistics show happened).
func TestCatchAllHandlesOnce(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "once", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	inbox := nats.NewInbox()
	replies := make(chan *nats.Msg, 1024)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	const n = 200
	for i := range n {
		data, err := proto.Marshal(&memoryv1.AppendRequest{CommandId: fmt.Sprintf("c%d", i), Messages: []*memoryv1.MessageInput{user("m")}})
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.PublishRequest("mem.v1.session.once.append", inbox, data); err != nil {
			t.Fatal(err)
		}
	}
	got, dups := 0, 0
	deadline := time.After(10 * time.Second)
	for got < n {
		select {
		case m := <-replies:
			if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
				t.Fatalf("append failed: %s %s", code, m.Header.Get("Nats-Service-Error"))
			}
			r := &memoryv1.AppendReply{}
			if err := proto.Unmarshal(m.Data, r); err != nil {
				t.Fatal(err)
			}
			if r.GetResult().GetDuplicate() {
				dups++
			}
			got++
		case <-deadline:
			t.Fatalf("%d replies of %d", got, n)
		}
	}
	select {
	case m := <-replies:
		t.Fatalf("a request was answered twice: extra reply %q", m.Data)
	case <-time.After(300 * time.Millisecond):
	}
	info, err := c.Get(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	if dups != 0 || info.GetTotalMessages() != n {
		t.Fatalf("%d duplicates, %d messages stored; want 0 and %d (each handled once)", dups, info.GetTotalMessages(), n)
	}
	rep, err := nc.Request("$SRV.STATS.memory", nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Endpoints []struct {
			Name        string `json:"name"`
			NumRequests int    `json:"num_requests"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(rep.Data, &stats); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for _, e := range stats.Endpoints {
		byName[e.Name] = e.NumRequests
	}
	if byName["session_other"] == 0 || byName["session_append"] == 0 {
		t.Fatalf("stats %v: want appends served both by session_append and through session_other", byName)
	}
}
