package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// partitionedNode starts a node with the log in k streams (no bounded
// log: not built per partition) and a fixed clock, so two nodes given the
// same requests record the same times.
func partitionedNode(t *testing.T, k int, dataDir string) (*node.Node, *nats.Conn) {
	t.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return node.StartForTest(t, func(cfg *node.Config) {
		cfg.LogPartitions = k
		cfg.LogWindow = 0
		cfg.HTTPAddr = "127.0.0.1:0" // the inspector too
		cfg.Now = func() time.Time { return at }
		if dataDir != "" {
			cfg.DataDir = dataDir
		}
	})
}

// streamSeqFields are the fields that hold a stream sequence: they differ
// between layouts (a sequence of one of K streams, or of the one stream).
var streamSeqFields = map[protoreflect.FullName]bool{
	"agentmem.memory.v1.MutationReply.seq":              true,
	"agentmem.memory.v1.MutationReply.consistency":      true,
	"agentmem.memory.v1.ContextReply.seq":               true,
	"agentmem.memory.v1.SessionInfo.seq":                true,
	"agentmem.memory.v1.SessionIndexEntry.last_seq":     true,
	"agentmem.memory.v1.ListSessionsReply.applied_seq":  true,
	"agentmem.memory.v1.SearchReply.applied_seq":        true,
	"agentmem.memory.v1.SearchEntriesReply.applied_seq": true,
}

// withoutStreamSeqs is m as JSON with the stream sequences cleared.
func withoutStreamSeqs(t *testing.T, m proto.Message) string {
	t.Helper()
	m = proto.Clone(m)
	var clear func(protoreflect.Message)
	clear = func(pm protoreflect.Message) {
		pm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case streamSeqFields[fd.FullName()]:
				pm.Clear(fd)
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					clear(v.List().Get(i).Message())
				}
			case fd.IsMap():
			case fd.Message() != nil:
				clear(v.Message())
			}
			return true
		})
	}
	clear(m.ProtoReflect())
	return protojson.Format(m)
}

// partitionScript sends the same requests to a node and returns its
// replies (stream sequences cleared), one string per request.
func partitionScript(t *testing.T, c *client.Client) []string {
	t.Helper()
	return partitionScriptSettled(t, c, nil)
}

// partitionScriptSettled is partitionScript calling settle (when not nil)
// after every write.
func partitionScriptSettled(t *testing.T, c *client.Client, settle func()) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out []string
	keep := func(what string, m proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, what+" "+withoutStreamSeqs(t, m))
		for _, w := range []string{"create ", "append ", "put ", "terminate "} {
			if settle != nil && strings.HasPrefix(what, w) {
				settle()
			}
		}
	}
	said := time.Date(2026, 2, 20, 9, 0, 0, 0, time.UTC)
	var sessions []string
	for u := range 3 {
		user := fmt.Sprintf("u%d", u)
		for j := range 4 {
			id := fmt.Sprintf("s%d-%d", u, j)
			sessions = append(sessions, id)
			rep, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: "agent-1", MaxContextTokens: 4000, ReservedOutputTokens: 500})
			keep("create "+id, rep, err)
		}
	}
	for round := range 3 {
		for i, id := range sessions {
			at := said.Add(time.Duration(round*100+i) * time.Minute).UnixNano()
			rep, err := c.AppendMessages(ctx, id,
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, SaidUnixNano: at,
					Content: fmt.Sprintf("Round %d in %s: my locker code is %d and the boat is called Heron %d.", round, id, 1000+10*i+round, i)},
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, SaidUnixNano: at + int64(time.Second),
					Content: fmt.Sprintf("Noted for %s: locker %d, boat Heron %d.", id, 1000+10*i+round, i)})
			keep("append "+id, rep, err)
			// The sections of the user message are searched after the
			// append is answered, from the projection as it is then: a
			// write made before they land (the next session's append, the
			// puts below) is among them in one run and not in another.
			// Read the context first, as a client does before it writes
			// on (the session holds the read until the sections land).
			if _, err := c.Context(ctx, id); err != nil {
				t.Fatalf("context %s after its append: %v", id, err)
			}
			// Read the session's own write back: the projection applies
			// the writes in the order they were made, in either layout.
			srep, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: "locker code", Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION, Limit: 5})
			keep("search session "+id, srep, err)
		}
	}
	for u := range 3 {
		rep, err := c.Put(ctx, client.User(fmt.Sprintf("u%d", u)), &memoryv1.PutEntryRequest{Key: "boat", Value: []byte(fmt.Sprintf("u%d sails the Heron", u)), ContentType: "text/plain"})
		keep(fmt.Sprintf("put user u%d", u), rep, err)
	}
	for _, id := range sessions {
		cx, err := c.Context(ctx, id)
		keep("context "+id, cx, err)
		for _, q := range []string{"what is the boat called", "locker code round 1"} {
			rep, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: q, Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER, Limit: 20})
			keep("search user "+id+" "+q, rep, err)
			rep, err = c.Search(ctx, id, &memoryv1.SearchRequest{Query: q, Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION, Limit: 10})
			keep("search session "+id+" "+q, rep, err)
		}
	}
	// Lists: a user's sessions, a user scope's entries.
	for u := range 3 {
		user := fmt.Sprintf("u%d", u)
		ls, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: user})
		keep("list sessions "+user, ls, err)
		le, err := c.ListEntries(ctx, client.User(user), &memoryv1.ListEntriesRequest{})
		keep("list entries "+user, le, err)
	}
	// Cross-session recall: u0's first session ends, a new one asks.
	// The terminate starts a consolidation of s0-0 (facts written to u0's
	// scope later): wait for its marker, so the next requests see it done.
	rs, err := c.SetStatus(ctx, "s0-0", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "sitting over")
	if err == nil {
		if rs.GetConsolidation() == nil {
			t.Fatal("terminate of s0-0 without a consolidation marker")
		}
		_, err = c.AwaitConsolidation(ctx, rs.GetConsolidation(), 20*time.Millisecond)
	}
	keep("terminate s0-0", rs, err)
	cs, err := c.CreateSession(ctx, "s0-next", &memoryv1.CreateSessionRequest{UserId: "u0", AgentId: "agent-1", MaxContextTokens: 4000, ReservedOutputTokens: 500})
	keep("create s0-next", cs, err)
	ap, err := c.AppendMessages(ctx, "s0-next", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER,
		SaidUnixNano: said.Add(1000 * time.Minute).UnixNano(), Content: "What was my locker code in round 1, and what is the boat called?"})
	keep("append s0-next", ap, err)
	nx, err := c.Context(ctx, "s0-next")
	keep("context s0-next", nx, err)
	// Watch through the service: a session's and a user scope's changes.
	for _, w := range []struct {
		endpoint string
		n        int
	}{{client.FollowSession("s1-2"), 4}, {client.FollowScope(client.User("u1")), 1}} {
		fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
		fw, err := c.Follow(fctx, w.endpoint, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var from uint64
		for ch := range fw.Changes() {
			if from == 0 {
				from = ch.Seq
			}
			got = append(got, fmt.Sprintf("%s: %s %s v%d, %d events at %s", ch.Subject, ch.Kind, ch.ID, ch.Version, len(ch.Events), ch.Time.UTC()))
			if len(got) == w.n {
				break
			}
		}
		fcancel()
		if len(got) != w.n {
			t.Fatalf("follow %s: %d changes (%v), want %d", w.endpoint, len(got), fw.Err(), w.n)
		}
		out = append(out, "follow "+w.endpoint+" "+strings.Join(got, "; "))
		// Again from the sequence of the first change: the rest.
		if w.n > 1 {
			fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
			fw, err := c.Follow(fctx, w.endpoint, from)
			if err != nil {
				t.Fatal(err)
			}
			var rest []string
			for ch := range fw.Changes() {
				rest = append(rest, fmt.Sprintf("%s: %s %s v%d, %d events at %s", ch.Subject, ch.Kind, ch.ID, ch.Version, len(ch.Events), ch.Time.UTC()))
				if len(rest) == w.n-1 {
					break
				}
			}
			fcancel()
			out = append(out, "follow "+w.endpoint+" from the first change "+strings.Join(rest, "; "))
		}
	}
	for u := range 3 {
		rep, err := c.SearchEntries(ctx, client.User(fmt.Sprintf("u%d", u)), &memoryv1.SearchEntriesRequest{Query: "Heron", Limit: 5})
		keep(fmt.Sprintf("search entries user u%d", u), rep, err)
	}
	return out
}

// TestLogPartitionsServeAsOneStream: a node with the log in six streams
// answers appends, contexts, session and user-scope search and scope
// entries as a node with the log in one stream does, request for request
// (stream sequences aside); the log is in MEM_P0..MEM_P5, no MEM; after a
// restart the projection goes on from each partition's checkpoint.
func TestLogPartitionsServeAsOneStream(t *testing.T) {
	_, nc1 := partitionedNode(t, 1, "")
	dir6 := t.TempDir()
	n6, nc6 := partitionedNode(t, 6, dir6)
	one := partitionScript(t, client.New(nc1))
	six := partitionScript(t, client.New(nc6))
	if len(one) != len(six) {
		t.Fatalf("%d replies vs %d", len(one), len(six))
	}
	for i := range one {
		if one[i] != six[i] {
			t.Fatalf("reply %d differs:\none stream:\n%s\nsix partitions:\n%s", i, one[i], six[i])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(nc6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, "MEM"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream MEM on the node of six partitions: %v", err)
	}
	var held uint64
	for i := range 6 {
		st, err := js.Stream(ctx, fmt.Sprintf("MEM_P%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if st.CachedInfo().State.Msgs == 0 {
			t.Fatalf("MEM_P%d holds nothing", i)
		}
		held += st.CachedInfo().State.Msgs
	}
	// 12 creates, 36 appends, 3 puts (and what the node writes itself).
	if held < 51 {
		t.Fatalf("the six streams hold %d messages, want at least 51", held)
	}
	mid := partitionedNodeSearch(t, ctx, nc6, "s2-3")
	// The inspector starts and lists the sessions (its pages of one
	// session read the whole log: not served with partitions yet).
	res, err := http.Get("http://" + n6.MetricsAddr() + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("inspector /ui/ with partitions: %d", res.StatusCode)
	}

	// Restart on the same data: the projection resumes per partition.
	if err := n6.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, again := partitionedNode(t, 6, dir6)
	if after := partitionedNodeSearch(t, ctx, again, "s2-3"); after != mid {
		t.Fatalf("the projection before and after the restart differ:\n%s\n%s", mid, after)
	}
	c := client.New(again)
	// A watch waiting at the session's last change wakes on the next one
	// (its subscription is on the subject as the partition stores it).
	last, err := c.Context(ctx, "s2-3")
	if err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
	defer fcancel()
	fw, err := c.Follow(fctx, client.FollowSession("s2-3"), last.GetSeq())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the poll waits: past its rechecks
	if _, err := c.AppendMessages(ctx, "s2-3", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "After the restart the boat is renamed Osprey."}); err != nil {
		t.Fatal(err)
	}
	select {
	case ch, ok := <-fw.Changes():
		if !ok || ch.Seq <= last.GetSeq() || ch.Subject != events.SessionSubject("s2-3") {
			t.Fatalf("the waiting watch got %+v (%v)", ch, fw.Err())
		}
	case <-fctx.Done():
		t.Fatal("the waiting watch was not woken by the append")
	}
	fcancel()
	rep, err := c.Search(ctx, "s2-3", &memoryv1.SearchRequest{Query: "Osprey", Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION})
	if err != nil || len(rep.GetHits()) != 1 {
		t.Fatalf("search after restart: %v, %v", rep, err)
	}
	// Erase is served with partitions (erase_partitions_test.go).
	if _, err := c.EraseSession(ctx, "s0-0", "test"); err != nil {
		t.Fatalf("erase with the log in partitions: %v", err)
	}
	if _, err := c.Get(ctx, "s0-0"); client.Code(err) != 404 {
		t.Fatalf("s0-0 after its erase: %v, want 404", err)
	}
}

// partitionedNodeSearch is a user-scope search from session id, as JSON
// without sequences.
func partitionedNodeSearch(t *testing.T, ctx context.Context, nc *nats.Conn, id string) string {
	t.Helper()
	rep, err := client.New(nc).Search(ctx, id, &memoryv1.SearchRequest{Query: "locker code", Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return withoutStreamSeqs(t, rep)
}

// TestLogPartitionsRefused: the layouts do not mix. A node of six
// partitions refuses a server holding the one stream MEM, and a node of
// one stream or of another K refuses the six streams; --log-window with
// partitions is served (the default window validates).
func TestLogPartitionsRefused(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.LogPartitions = 6
	if err := cfg.Validate(); err != nil {
		t.Fatalf("log-partitions 6 with the default log window: %v", err)
	}
	cfg.LogPartitions = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("log-partitions -1 validated")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ first, then int }{{1, 6}, {6, 1}, {6, 4}} {
		dir := t.TempDir()
		n, _ := partitionedNode(t, tc.first, dir)
		if err := n.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		c := node.DefaultConfig()
		c.DataDir, c.NATSListen, c.HTTPAddr, c.LogWindow, c.LogPartitions = dir, "127.0.0.1:-1", "", 0, tc.then
		n2, err := node.Start(ctx, c, slog.New(slog.DiscardHandler))
		if err == nil {
			_ = n2.Shutdown(ctx)
			t.Fatalf("a node of %d partitions started on the log of %d", tc.then, tc.first)
		}
		if n2 != nil {
			_ = n2.Shutdown(ctx)
		}
		if !errors.Is(err, events.ErrPartitions) && !errors.Is(err, projections.ErrLogPartitions) {
			t.Fatalf("%d then %d partitions: %v, want ErrPartitions or ErrLogPartitions", tc.first, tc.then, err)
		}
	}
}

// A session that has stored more commands than its actor remembers asks
// the projection's command index, which must wait for the session's own
// stream only: with the log in partitions, waiting for the least of all
// partitions' checkpoints never ends while a partition is empty (503).
func TestLogPartitionsCommandIndexWaitsForItsPartition(t *testing.T) {
	_, nc := partitionedNode(t, 6, "")
	c := client.New(nc).WithTimeout(10 * time.Second)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "long", &memoryv1.CreateSessionRequest{}); err != nil {
		t.Fatal(err)
	}
	// More commands than the actor's ring (512) and window (64) hold.
	for i := range 600 {
		req := &memoryv1.AppendRequest{CommandId: fmt.Sprintf("cmd-%d", i),
			Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("note %d", i)}}}
		if _, err := c.Append(ctx, "long", req); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	// A retry of the first command is found in the index: a duplicate.
	rep, err := c.Append(ctx, "long", &memoryv1.AppendRequest{CommandId: "cmd-0",
		Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "note 0"}}})
	if err != nil {
		t.Fatalf("retry of the first command: %v", err)
	}
	if !rep.GetResult().GetDuplicate() {
		t.Fatalf("retry of the first command stored again: %v", rep.GetResult())
	}
}
