package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestLargeDataAboveMaxPayload puts values bigger than one NATS message
// (the embedded server's max payload is 8 MiB) through the Go client and
// reads them back byte-exact. Before chunked uploads, a 9 MiB put failed
// with "maximum payload exceeded".
func TestLargeDataAboveMaxPayload(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"9 MiB random", randomBytes(9 << 20)},
		{"20 MiB text", bytes.Repeat([]byte("order 17 shipped to Alice in region 3\n"), 20<<20/38)},
		{"64 MiB random (the limit)", randomBytes(64 << 20)},
	} {
		ref, err := c.PutData(ctx, tc.data, "application/octet-stream", map[string]string{"case": tc.name}, time.Hour)
		if err != nil {
			t.Fatalf("%s: put %d bytes: %v", tc.name, len(tc.data), err)
		}
		sum := sha256.Sum256(tc.data)
		if ref.GetSize() != uint64(len(tc.data)) || ref.GetSha256() != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: reference %v", tc.name, ref)
		}
		got, back, err := c.GetData(ctx, ref.GetId())
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		if !bytes.Equal(back, tc.data) || got.GetMetadata()["case"] != tc.name {
			t.Fatalf("%s: got %d bytes back (want %d), ref %v", tc.name, len(back), len(tc.data), got)
		}
	}
	over := make([]byte, 64<<20+1)
	if _, err := c.PutData(ctx, over, "application/octet-stream", nil, time.Hour); client.Code(err) != 413 {
		t.Fatalf("put of 64 MiB + 1: %v, want 413", err)
	}
}

// TestLargeDataFollowsSession: a tool result a session offloaded is kept
// past its lease while the session is live, then removed once the session
// is terminated; data.put data without a referrer goes with its lease. A
// read of removed data is a 404 naming the id and saying it expired.
// (Real NATS and real time: a 1 s lease and a 100 ms sweep.)
func TestLargeDataFollowsSession(t *testing.T) {
	_, nc := node.StartForTest(t, func(cfg *node.Config) {
		cfg.Data.DefaultTTL = time.Second
		cfg.Data.SweepEvery = 100 * time.Millisecond
	})
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	result := strings.Repeat("order 42 shipped to Alice\n", 200<<10/26)
	if _, err := c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call1", Name: "orders", Arguments: "{}"}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call1", Name: "orders", Content: result},
	); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Recall(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var held *memoryv1.DataReference
	for _, m := range rec.GetMessages() {
		if m.GetDataRef() != nil {
			held = m.GetDataRef()
		}
	}
	if held == nil {
		t.Fatal("the tool result was not offloaded")
	}
	loose, err := c.PutData(ctx, []byte("nobody refers to this"), "text/plain", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the sweep removed the unreferenced data (its lease, like
	// the tool result's, is 1 s).
	waitExpired(t, c, loose.GetId())
	_, back, err := c.GetData(ctx, held.GetId())
	if err != nil || string(back) != result {
		t.Fatalf("tool result of a live session after its lease: %v (%d bytes)", err, len(back))
	}
	if _, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	waitExpired(t, c, held.GetId())
}

// waitExpired polls data.get of id until it answers 404 saying the data
// expired and was removed (at most 15 s).
func waitExpired(t *testing.T, c *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, _, err := c.GetData(context.Background(), id)
		if client.Code(err) == 404 && strings.Contains(err.Error(), id) && strings.Contains(err.Error(), "expired") && strings.Contains(err.Error(), "removed") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("data %s not removed after its lease: get = %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLargeDataJSONUpload drives the chunked protocol by hand in JSON:
// upload parts, commit with data.put, read ranges with data.get; the errors
// name their field.
func TestLargeDataJSONUpload(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	data := randomBytes(10 << 20)
	const part = 3 << 20
	req := func(subject, body string) (string, []byte) {
		t.Helper()
		code, _, rep := rawRequest(t, nc, subject, []byte(body), true)
		return code, rep
	}
	upload := ""
	for off := 0; off < len(data); off += part {
		end := min(off+part, len(data))
		body := fmt.Sprintf(`{"upload_id":%q,"offset":%d,"data":%q}`, upload, off, base64.StdEncoding.EncodeToString(data[off:end]))
		code, rep := req("mem.v1.data.upload", body)
		var r memoryv1.UploadDataReply
		if code != "" || protojson.Unmarshal(rep, &r) != nil || r.GetReceived() != uint64(end) {
			t.Fatalf("upload at %d: code %s %s", off, code, rep)
		}
		upload = r.GetUploadId()
	}
	if code, rep := req("mem.v1.data.put", fmt.Sprintf(`{"upload_id":%q,"size":%d,"data":"eA=="}`, upload, len(data))); code != "400" || !strings.Contains(string(rep), `"data"`) {
		t.Fatalf("commit with data: %s %s", code, rep)
	}
	if code, rep := req("mem.v1.data.put", fmt.Sprintf(`{"upload_id":%q,"size":%d}`, upload, len(data)+1)); code != "400" || !strings.Contains(string(rep), "no part at offset") {
		t.Fatalf("commit with the wrong size: %s %s", code, rep)
	}
	code, rep := req("mem.v1.data.put", fmt.Sprintf(`{"upload_id":%q,"size":%d,"content_type":"application/octet-stream"}`, upload, len(data)))
	var put memoryv1.PutDataReply
	if code != "" || protojson.Unmarshal(rep, &put) != nil {
		t.Fatalf("commit: %s %s", code, rep)
	}
	id := put.GetRef().GetId()
	if code, rep := req("mem.v1.data.get", fmt.Sprintf(`{"id":%q}`, id)); code != "413" || !strings.Contains(string(rep), `"length"`) {
		t.Fatalf("get of 10 MiB in one JSON reply: %s %.300s; want 413 naming length", code, rep)
	}
	var back []byte
	for len(back) < len(data) {
		code, rep := req("mem.v1.data.get", fmt.Sprintf(`{"id":%q,"offset":%d,"length":%d}`, id, len(back), part))
		var g memoryv1.GetDataReply
		if code != "" || protojson.Unmarshal(rep, &g) != nil || len(g.GetData()) == 0 {
			t.Fatalf("get at %d: %s %.300s", len(back), code, rep)
		}
		back = append(back, g.GetData()...)
	}
	if !bytes.Equal(back, data) {
		t.Fatal("the bytes read back differ")
	}
	if code, rep := req("mem.v1.data.put", fmt.Sprintf(`{"upload_id":%q,"size":10}`, strings.Repeat("ab", 16))); code != "404" || !strings.Contains(string(rep), "upload_id") {
		t.Fatalf("commit of an unknown upload: %s %s", code, rep)
	}
}
