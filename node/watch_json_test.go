package node_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// jsonWatch polls mem.v1.agent.a1.watch with a JSON body, as a client
// without protobuf would, and decodes the reply generically.
func jsonWatch(t *testing.T, nc *nats.Conn, body string) (changes []map[string]any, lastSeq string, size int) {
	t.Helper()
	msg := nats.NewMsg("mem.v1.agent.a1.watch")
	msg.Header.Set("Content-Type", "application/json")
	msg.Data = []byte(body)
	rep, err := nc.RequestMsg(msg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := rep.Header.Get("Nats-Service-Error-Code"); code != "" {
		t.Fatalf("watch: %s %s", code, rep.Header.Get("Nats-Service-Error"))
	}
	var r struct {
		Changes []map[string]any `json:"changes"`
		LastSeq string           `json:"lastSeq"`
		Last2   string           `json:"last_seq"`
	}
	if err := json.Unmarshal(rep.Data, &r); err != nil {
		t.Fatalf("reply is not JSON: %v", err)
	}
	if r.LastSeq == "" {
		r.LastSeq = r.Last2
	}
	return r.Changes, r.LastSeq, len(rep.Data)
}

// TestWatchJSONDecodesValues: a JSON watch gets the events inline (typed by
// "@type") with entry values decompressed, so a watcher needs only a NATS
// client; pages stay under the reply limit and the next poll continues
// where the page ended, nothing lost.
func TestWatchJSONDecodesValues(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	big := strings.Repeat("abc", 2000) // compressed in the log
	if _, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "big", Value: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	changes, _, _ := jsonWatch(t, nc, `{"from_seq":0,"wait_ms":0}`)
	if len(changes) != 1 {
		t.Fatalf("%d changes, want 1", len(changes))
	}
	ev := changes[0]["batch"].(map[string]any)["events"].([]any)[0].(map[string]any)
	if !strings.HasSuffix(ev["@type"].(string), "agentmem.memory.v1.EntryChanged") {
		t.Fatalf("event type %v", ev["@type"])
	}
	entry := ev["entry"].(map[string]any)
	v, _ := base64.StdEncoding.DecodeString(entry["value"].(string))
	if string(v) != big || entry["compressed"] == true {
		t.Fatalf("value not decompressed: compressed=%v, %d bytes", entry["compressed"], len(v))
	}

	// Twelve ~150 KB incompressible values: more than one reply can hold.
	var want []uint64
	for range 12 {
		b := make([]byte, 150<<10)
		_, _ = rand.Read(b)
		r, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "blob", Value: b})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r.GetResult().GetSeq())
	}
	from := "1" // after the first put
	var got []string
	for polls := 0; len(got) < len(want); polls++ {
		if polls > 12 {
			t.Fatalf("after %d polls got %d of %d changes", polls, len(got), len(want))
		}
		changes, last, size := jsonWatch(t, nc, `{"from_seq":"`+from+`","wait_ms":0,"max_changes":64}`)
		if size > 1<<20 {
			t.Fatalf("reply of %d bytes", size)
		}
		if len(changes) == 0 || len(changes) == len(want) {
			t.Fatalf("poll %d: %d changes in one reply", polls, len(changes))
		}
		for _, ch := range changes {
			got = append(got, ch["seq"].(string))
		}
		from = last
	}
	for i, s := range want {
		if got[i] != jsonUint(s) {
			t.Fatalf("change %d: seq %s, want %d", i, got[i], s)
		}
	}
}

func jsonUint(v uint64) string { b, _ := json.Marshal(v); return strings.Trim(string(b), `"`) }
