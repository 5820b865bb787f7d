package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func i64(v int64) *int64 { return &v }

// TestScopeCASContention: 16 writers put the same key with the same
// expected version at once; the actor decides them one at a time, so
// exactly one wins and every other gets 409 naming the current version.
func TestScopeCASContention(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for _, sc := range []client.Scope{client.Agent("cas"), client.Workflow("cas")} {
		if _, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "counter", Value: []byte("0")}); err != nil {
			t.Fatal(err)
		}
		const writers = 16
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "counter", Value: []byte{byte('a' + i)}, ExpectedVersion: i64(1)})
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		for i, err := range errs {
			if err == nil {
				winners++
				continue
			}
			var e *client.Error
			if !asClientError(err, &e) || e.Code != 409 || e.Field != "expected_version" || !strings.Contains(e.Message, "current is 2") {
				t.Errorf("%v writer %d: %v, want 409 expected_version ... current is 2", sc, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("%v: %d writers won, want exactly 1", sc, winners)
		}
		h, err := c.History(ctx, sc, "counter")
		if err != nil || len(h) != 2 {
			t.Fatalf("%v: history %v %v, want 2 versions", sc, err, h)
		}
	}
}

func asClientError(err error, e **client.Error) bool {
	ce, ok := err.(*client.Error)
	if ok {
		*e = ce
	}
	return ok
}

// TestScopeBadInput sends malformed scope requests: each is answered with a
// clear code and names the field, and the scope is unchanged afterwards.
func TestScopeBadInput(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.Put(ctx, client.Workflow("w"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, value []byte, ev *int64) []byte {
		return marshal(t, &memoryv1.PutEntryRequest{CommandId: "c-" + hex.EncodeToString([]byte(key))[:min(8, 2*len(key))], Key: key, Value: value, ExpectedVersion: ev})
	}
	cases := []struct {
		name, subject string
		body          []byte
		code, field   string
	}{
		{"empty key", "mem.v1.scope.workflow.w.put", put("", []byte("x"), nil), "400", "key"},
		{"key with space", "mem.v1.scope.workflow.w.put", put("a b", []byte("x"), nil), "400", "key"},
		{"key starting with dot", "mem.v1.scope.workflow.w.put", put(".k", []byte("x"), nil), "400", "key"},
		{"key starting with slash", "mem.v1.agent.a.put", put("/k", []byte("x"), nil), "400", "key"},
		{"key too long", "mem.v1.scope.workflow.w.put", put(strings.Repeat("k", sharedmem.MaxKeyBytes+1), []byte("x"), nil), "400", "key"},
		{"bad key on get", "mem.v1.scope.workflow.w.get", marshal(t, &memoryv1.GetEntryRequest{Key: "k*"}), "400", "key"},
		{"bad key on history", "mem.v1.agent.a.history", marshal(t, &memoryv1.HistoryRequest{Key: ""}), "400", "key"},
		{"unknown kind", "mem.v1.scope.galaxy.x.put", put("k", []byte("x"), nil), "400", "kind"},
		{"agent via scope", "mem.v1.scope.agent.x.put", put("k", []byte("x"), nil), "400", "kind"},
		{"expected version mismatch", "mem.v1.scope.workflow.w.put", put("k", []byte("x"), i64(7)), "409", "expected_version"},
		{"expected version 0 on live key", "mem.v1.scope.workflow.w.put", put("k", []byte("x"), i64(0)), "409", "expected_version"},
		{"expected version below -1", "mem.v1.scope.workflow.w.put", put("k", []byte("x"), i64(-2)), "400", "expected_version"},
		{"value 1 MiB + 1", "mem.v1.scope.workflow.w.put", put("k", make([]byte, sharedmem.MaxValueBytes+1), nil), "413", "value"},
		{"agent value 1 MiB + 1", "mem.v1.agent.a.put", put("k", make([]byte, sharedmem.MaxValueBytes+1), nil), "413", "value"},
		{"agent id with dot", "mem.v1.agent.a.b.put", put("k", []byte("x"), nil), "400", "id"},
		{"scope id with dot", "mem.v1.scope.workflow.w.x.put", put("k", []byte("x"), nil), "400", "id"},
		{"scope id with colon", "mem.v1.scope.workflow.w:x.put", put("k", []byte("x"), nil), "400", "id"},
		{"global with another id", "mem.v1.scope.global.mine.put", put("k", []byte("x"), nil), "400", "id"},
		{"importance above 1", "mem.v1.scope.workflow.w.put", marshal(t, &memoryv1.PutEntryRequest{Key: "k", Importance: 2}), "400", "importance"},
		{"missing version", "mem.v1.scope.workflow.w.get", marshal(t, &memoryv1.GetEntryRequest{Key: "k", Version: 9}), "404", "version"},
		{"missing key", "mem.v1.scope.workflow.w.get", marshal(t, &memoryv1.GetEntryRequest{Key: "nope"}), "404", "key"},
		{"list limit", "mem.v1.scope.workflow.w.list", marshal(t, &memoryv1.ListEntriesRequest{Limit: 1001}), "400", "limit"},
		{"list page token", "mem.v1.scope.workflow.w.list", marshal(t, &memoryv1.ListEntriesRequest{PageToken: "!!"}), "400", "page_token"},
		{"search limit", "mem.v1.scope.workflow.w.search", marshal(t, &memoryv1.SearchEntriesRequest{Query: "x", Limit: limits.MaxSearchLimit + 1}), "400", "limit"},
		{"undecodable body", "mem.v1.scope.workflow.w.put", []byte{0xff, 0xff, 0xff}, "400", "body"},
		{"resolve off a session", "mem.v1.scope.workflow.w.resolve", marshal(t, &memoryv1.ResolveRequest{Key: "k"}), "400", "kind"},
		{"resolve bad key", "mem.v1.scope.session.s.resolve", marshal(t, &memoryv1.ResolveRequest{Key: "a b"}), "400", "key"},
		{"publish target", "mem.v1.scope.session.s.publish", marshal(t, &memoryv1.PublishRequest{Key: "k", Target: "moon"}), "400", "target"},
		{"data id", "mem.v1.data.get", marshal(t, &memoryv1.GetDataRequest{Id: "a/b"}), "400", "id"},
		{"data ttl", "mem.v1.data.put", marshal(t, &memoryv1.PutDataRequest{Data: []byte("x"), TtlSeconds: -1}), "400", "ttl_seconds"},
		{"data missing", "mem.v1.data.get", marshal(t, &memoryv1.GetDataRequest{Id: "0123456789abcdef0123456789abcdef"}), "404", "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, asJSON := range []bool{false} {
				code, desc, body := rawRequest(t, nc, tc.subject, tc.body, asJSON)
				if code != tc.code || !strings.HasPrefix(desc, tc.field+": ") {
					t.Fatalf("%s: code %q, error %q; want %s naming %q", tc.subject, code, desc, tc.code, tc.field)
				}
				detail := &memoryv1.ErrorDetail{}
				if err := proto.Unmarshal(body, detail); err != nil || detail.GetField() != tc.field {
					t.Fatalf("error body %v (%v), want field %q", detail, err, tc.field)
				}
			}
		})
	}
	h, err := c.History(ctx, client.Workflow("w"), "k")
	if err != nil || len(h) != 1 || string(h[0].GetValue()) != "v1" {
		t.Fatalf("after the bad requests: %v %v", err, h)
	}
	// A JSON body is answered in JSON with the same code.
	code, desc, _ := rawRequest(t, nc, "mem.v1.scope.galaxy.x.put", []byte(`{"key":"k"}`), true)
	if code != "400" || !strings.HasPrefix(desc, "kind: ") {
		t.Fatalf("JSON unknown kind: %s %s", code, desc)
	}
}

// TestResolveOrder sets one key at every level a session resolves through
// and removes the levels one by one: temp, then the context assembler's
// order: agent > agent_type > session > user > project > app > global.
func TestResolveOrder(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", App: "crm", Project: "p1",
		AgentId: "a1", AgentType: "dba", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	const key = "tone"
	levels := []struct {
		name  string
		scope client.Scope
	}{
		{"agent:a1", client.Agent("a1")},
		{"agent_type:dba", client.AgentType("dba")},
		{"session:s1", client.SessionScope("s1")},
		{"user:u1", client.User("u1")},
		{"project:p1", client.Project("p1")},
		{"app:crm", client.App("crm")},
		{"global", client.Global()},
	}
	for _, l := range levels {
		if _, err := c.Put(ctx, l.scope, &memoryv1.PutEntryRequest{Key: key, Value: []byte("from " + l.name)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another session's and another user's entries never take part.
	if _, err := c.Put(ctx, client.SessionScope("s2"), &memoryv1.PutEntryRequest{Key: key, Value: []byte("from s2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.State(ctx, "s1", &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_SET, Key: "temp:" + key, Value: []byte("from temp")}); err != nil {
		t.Fatal(err)
	}
	want := func(scope, value string) {
		t.Helper()
		r, err := c.Resolve(ctx, "s1", key)
		if err != nil {
			t.Fatal(err)
		}
		if scope == "" {
			if r.GetFound() {
				t.Fatalf("resolve found %s = %q, want nothing", r.GetScope(), r.GetEntry().GetValue())
			}
			return
		}
		if !r.GetFound() || r.GetScope() != scope || string(r.GetEntry().GetValue()) != value {
			t.Fatalf("resolve: found=%v %s = %q, want %s = %q", r.GetFound(), r.GetScope(), r.GetEntry().GetValue(), scope, value)
		}
	}
	want("temp", "from temp")
	if _, err := c.State(ctx, "s1", &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_DELETE, Key: "temp:" + key}); err != nil {
		t.Fatal(err)
	}
	for i, l := range levels {
		want(l.name, "from "+l.name)
		if _, err := c.DeleteEntry(ctx, l.scope, &memoryv1.DeleteEntryRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
		if i == len(levels)-1 {
			want("", "")
		}
	}
	if _, err := c.Resolve(ctx, "nosuch", key); client.Code(err) != 404 {
		t.Fatalf("resolve for an unknown session: %v, want 404", err)
	}
}

// TestPublish copies a session-scope entry into the user scope.
func TestPublish(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	src, err := c.Put(ctx, client.SessionScope("s1"), &memoryv1.PutEntryRequest{
		Key: "pref:lang", Value: []byte("Go, always"), ContentType: "text/plain",
		MemoryType: memoryv1.MemoryType_MEMORY_TYPE_PROCEDURAL, Tags: []string{"pref"}, Importance: 0.8,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "pref:lang", Value: []byte("Python")}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Publish(ctx, "s1", "pref:lang", "user")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetEntry(ctx, client.User("u1"), "pref:lang", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := src.GetEntry()
	if string(got.GetValue()) != "Go, always" || got.GetVersion() != 2 || got.GetContentType() != s.GetContentType() ||
		got.GetMemoryType() != s.GetMemoryType() || got.GetImportance() != s.GetImportance() || len(got.GetTags()) != 1 {
		t.Fatalf("published entry %v, source %v", got, s)
	}
	if got.GetChange() != memoryv1.ChangeKind_CHANGE_KIND_PUBLISH || rep.GetEntry().GetVersion() != 2 {
		t.Errorf("published entry change %v, reply version %d", got.GetChange(), rep.GetEntry().GetVersion())
	}
	// The source is untouched, and the old user value is still in history.
	if e, err := c.GetEntry(ctx, client.SessionScope("s1"), "pref:lang", 0); err != nil || e.GetVersion() != 1 {
		t.Fatalf("source after publish: %v %v", err, e)
	}
	if h, err := c.History(ctx, client.User("u1"), "pref:lang"); err != nil || len(h) != 2 || string(h[0].GetValue()) != "Python" {
		t.Fatalf("user history: %v %v", err, h)
	}
	if _, err := c.Publish(ctx, "s1", "nope", "user"); client.Code(err) != 404 {
		t.Fatalf("publish a missing key: %v, want 404", err)
	}
	if _, err := c.Publish(ctx, "s1", "pref:lang", "project"); client.Code(err) != 409 {
		t.Fatalf("publish to the project of a session without one: %v, want 409", err)
	}
}

// TestLargeDataAPI puts and gets large data over mem.v1.data.*.
func TestLargeDataAPI(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	random := make([]byte, 300<<10)
	_, _ = rand.Read(random)
	for _, tc := range []struct {
		name       string
		data       []byte
		compressed bool
	}{
		{"small", []byte("hello"), false},
		{"compressible 1 MiB", bytes.Repeat([]byte("row,42,Alice,approved\n"), 1<<20/22), true},
		{"random 300 KiB", random, false},
	} {
		ref, err := c.PutData(ctx, tc.data, "text/csv", map[string]string{"source": tc.name}, time.Hour)
		if err != nil {
			t.Fatalf("%s: put: %v", tc.name, err)
		}
		sum := sha256.Sum256(tc.data)
		if ref.GetSize() != uint64(len(tc.data)) || ref.GetSha256() != hex.EncodeToString(sum[:]) ||
			ref.GetCompressed() != tc.compressed || ref.GetContentType() != "text/csv" || ref.GetExpiresUnixNano() == 0 {
			t.Fatalf("%s: reference %v", tc.name, ref)
		}
		got, back, err := c.GetData(ctx, ref.GetId())
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		if !bytes.Equal(back, tc.data) || got.GetSha256() != ref.GetSha256() || got.GetMetadata()["source"] != tc.name {
			t.Fatalf("%s: got %d bytes, ref %v", tc.name, len(back), got)
		}
	}
}

// TestLargeToolResult appends a tool result above 100 KB: it is stored as
// large data, the context holds only a short reference, and the bytes come
// back from mem.v1.data.get.
func TestLargeToolResult(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", SystemPrompt: "sys", MaxContextTokens: 8000}); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := 0; sb.Len() <= 150<<10; i++ {
		sb.WriteString("order ")
		sb.WriteString(hex.EncodeToString([]byte{byte(i), byte(i >> 8)}))
		sb.WriteString(" shipped to Alice in region 3\n")
	}
	result := sb.String()
	rep, err := c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "list all orders"},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call1", Name: "orders", Arguments: "{}"}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call1", Name: "orders", Content: result},
	)
	if err != nil {
		t.Fatal(err)
	}
	if tok := rep.GetTokens()[2]; tok == 0 || tok > 100 {
		t.Fatalf("the tool result counts %d tokens, want a short reference (<= 100)", tok)
	}
	cx, err := c.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var ref string
	for _, m := range cx.GetMessages() {
		if m.GetRole() != memoryv1.Role_ROLE_TOOL {
			continue
		}
		if len(m.GetContent()) > 300 || m.GetTokens() > 100 || !strings.Contains(m.GetContent(), "mem.v1.data.get") {
			t.Fatalf("tool message in the context: %d bytes, %d tokens: %.200q", len(m.GetContent()), m.GetTokens(), m.GetContent())
		}
		ref = m.GetContent()
	}
	if ref == "" {
		t.Fatal("no tool message in the context")
	}
	rec, err := c.Recall(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var dr *memoryv1.DataReference
	for _, m := range rec.GetMessages() {
		if m.GetRole() == memoryv1.Role_ROLE_TOOL {
			dr = m.GetDataRef()
			if m.GetContent() != ref {
				t.Errorf("stored content %.100q differs from the context's %.100q", m.GetContent(), ref)
			}
		}
	}
	if dr == nil || dr.GetSize() != uint64(len(result)) || dr.GetMetadata()["tool_call_id"] != "call1" {
		t.Fatalf("stored tool message's data ref: %v", dr)
	}
	if !strings.Contains(ref, dr.GetId()) {
		t.Errorf("reference text %q does not name %s", ref, dr.GetId())
	}
	_, back, err := c.GetData(ctx, dr.GetId())
	if err != nil || string(back) != result {
		t.Fatalf("get the tool result: %v (%d bytes, want %d)", err, len(back), len(result))
	}
}

// TestCorruptLargeData tampers with an object in the node's object store
// (no memory tier, so every read comes from disk): the get answers 500 and
// never the bytes.
func TestCorruptLargeData(t *testing.T) {
	_, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.Data.MemoryBytes = 0 })
	c := client.New(nc)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"plain", randomBytes(64 << 10)},
		{"compressed", bytes.Repeat([]byte("the same line again\n"), 10000)},
	} {
		ref, err := c.PutData(ctx, tc.data, "application/octet-stream", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, back, err := c.GetData(ctx, ref.GetId()); err != nil || !bytes.Equal(back, tc.data) {
			t.Fatalf("%s: read before tampering: %v", tc.name, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := js.ObjectStore(ctx, "MEM_DATA")
		if err != nil {
			t.Fatal(err)
		}
		info, err := obs.GetInfo(ctx, ref.GetId())
		if err != nil {
			t.Fatal(err)
		}
		stored, err := obs.GetBytes(ctx, ref.GetId())
		if err != nil {
			t.Fatal(err)
		}
		stored[len(stored)/2] ^= 0x01 // one bit, same length, same metadata
		if _, err := obs.Put(ctx, info.ObjectMeta, bytes.NewReader(stored)); err != nil {
			t.Fatal(err)
		}
		got, back, err := c.GetData(ctx, ref.GetId())
		if client.Code(err) != 500 || back != nil || got != nil {
			t.Fatalf("%s: get of a tampered object: %v, %d bytes; want 500 and no bytes", tc.name, err, len(back))
		}
		if !strings.Contains(err.Error(), ref.GetId()) {
			t.Errorf("%s: error %q does not name the object", tc.name, err)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
