package inspector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestPagesServePartitions: with the log in six partitions the pages of
// one session (context, timeline, time travel, conversation, search) and
// the scopes directory are served, each session read from its partition's
// stream: at every batch of a session the time travel context is the one
// `replay inspect --at-seq` rebuilds at that sequence of the session's
// partition, before and after an erasure.
func TestPagesServePartitions(t *testing.T) {
	u := startNode(t, func(c *node.Config) { c.LogPartitions, c.LogWindow = 6, 0 })
	u.session(t, "s1", "u1", "a1", 12)
	u.session(t, "s2", "u1", "a1", 3)
	for _, p := range []string{"/ui/", "/ui/s/s1", "/ui/s/s1/timeline", "/ui/s/s1/timeline?seq=5", "/ui/s/s1/search?q=refund+kettle", "/ui/scopes?kind=global", "/ui/s/s1/at.json?seq=5",
		"/ui/s/s1/conversation", "/ui/s/s1/conversation?n=1", "/ui/s/s1/message/1", "/ui/s/s1/at?seq=5", "/ui/s/s1/timeline/rows?after=0",
		"/ui/s/s1/timeline?kind=append&page=1", "/ui/s/s2", "/ui/s/s2/timeline", "/ui/s/s2/at?seq=2"} {
		code, body := get(t, u.base, p, nil, "", "")
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body[:min(len(body), 400)])
		}
		if strings.Contains(body, "not served") {
			t.Errorf("GET %s: says not served", p)
		}
	}
	sameAsReplay(t, u, "s1", "s2")
	// After s1 is erased (its removal in its own stream's ledger), the
	// pages and replay inspect of s2, which recalled s1's messages, still
	// agree.
	if _, err := u.c.EraseSession(context.Background(), "s1", "test"); err != nil {
		t.Fatal(err)
	}
	sameAsReplay(t, u, "s2")
}

// sameAsReplay checks, at every batch of the sessions' timelines, that the
// time-travel context the inspector serves is the one `replay inspect
// --at-seq` rebuilds at that sequence of the session's partition.
func sameAsReplay(t *testing.T, u *uiNode, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, body := get(t, u.base, "/ui/s/"+id+"/timeline", nil, "", "")
		seqs := regexp.MustCompile(`data-seq="(\d+)"`).FindAllStringSubmatch(body, -1)
		if len(seqs) < 3 {
			t.Fatalf("%s: %d batches on the timeline", id, len(seqs))
		}
		for _, m := range seqs {
			code, body := get(t, u.base, "/ui/s/"+id+"/at.json?seq="+m[1], nil, "", "")
			if code != 200 {
				t.Fatalf("%s at.json?seq=%s: %d %s", id, m[1], code, body)
			}
			var page struct{ Context json.RawMessage }
			if err := json.Unmarshal([]byte(body), &page); err != nil {
				t.Fatal(err)
			}
			got := new(memoryv1.ContextReply)
			if err := protojson.Unmarshal(page.Context, got); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			seq, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if err := replay.Inspect(context.Background(), replay.InspectConfig{Conn: replay.Conn{NATSURL: u.n.ClientURL()}, SessionID: id, AtSeq: seq, JSON: true}, &out); err != nil {
				t.Fatalf("replay inspect %s --at-seq %d: %v", id, seq, err)
			}
			var parts struct{ Context json.RawMessage }
			if err := json.Unmarshal(out.Bytes(), &parts); err != nil {
				t.Fatal(err)
			}
			want := new(memoryv1.ContextReply)
			if err := protojson.Unmarshal(parts.Context, want); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) || got.GetSeq() != seq {
				t.Fatalf("%s at seq %d: the page's context (seq %d) differs from replay inspect's (seq %d)", id, seq, got.GetSeq(), want.GetSeq())
			}
		}
	}
}
