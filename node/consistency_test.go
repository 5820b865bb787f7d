package node_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// served is one answer of serveOn: its code (200 or the error's) and body.
type served struct {
	code int
	data []byte
}

// serveOn hands one JSON request to node n's own dispatcher (a read is
// served where the test says, not by whichever node the queue group picks)
// and returns where its answer arrives.
func serveOn(t *testing.T, n *node.Node, subject string, body proto.Message) <-chan served {
	t.Helper()
	data, err := protojson.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	hdr := nats.Header{}
	hdr.Set("Content-Type", api.ContentTypeJSON)
	out := make(chan served, 1)
	n.ServeForTest(&api.Request{Subject: subject, Header: hdr, Data: data, Write: func(data []byte, h nats.Header) {
		code := 200
		if c := h.Get(micro.ErrorCodeHeader); c != "" {
			code, _ = strconv.Atoi(c)
		}
		out <- served{code: code, data: data}
	}})
	return out
}

// servedErr is s's error as the Go client reports it (nil: 200).
func servedErr(t *testing.T, s served) error {
	t.Helper()
	if s.code == 200 {
		return nil
	}
	var d memoryv1.ErrorDetail
	if err := protojson.Unmarshal(s.data, &d); err != nil {
		t.Fatal(err)
	}
	return &client.Error{Code: int(d.GetCode()), Field: d.GetField(), Message: d.GetMessage()}
}

// asClientError is errors.As for a *client.Error.
func asClientError(err error, target **client.Error) bool { return errors.As(err, target) }

// listedOn is the sessions of user that node n lists, waiting as body says.
func listedOn(t *testing.T, ch <-chan served) []string {
	t.Helper()
	var s served
	select {
	case s = <-ch:
	case <-time.After(15 * time.Second):
		t.Fatal("no answer to sessions.list")
	}
	if s.code != 200 {
		t.Fatalf("sessions.list: %d %s", s.code, s.data)
	}
	var rep memoryv1.ListSessionsReply
	if err := protojson.Unmarshal(s.data, &rep); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range rep.GetSessions() {
		ids = append(ids, e.GetSessionId())
	}
	return ids
}

// A read on one node with the token of a write another node made waits
// for exactly that write's partition. A bare min_seq names no partition:
// the node bounds it by the sequences it knows (partitionMarks), so the
// same read with min_seq may answer without the write.
func TestConsistencyTokenReadsAnotherNodesWrite(t *testing.T) {
	const k = 6
	cl := startNATSCluster(t)
	var nodes []*node.Node
	for i := range 3 {
		nodes = append(nodes, startR3Node(t, cl.urls[i:i+1], fmt.Sprintf("n%d", i), func(c *node.Config) {
			c.LogPartitions = k
			c.LogWindow = 0
			order := append([]string{cl.urls[i]}, append(append([]string{}, cl.urls[:i]...), cl.urls[i+1:]...)...)
			c.NATSURL = strings.Join(order, ",")
		}))
	}
	clients, js := clusterClients(t, cl)
	waitSettled(t, nodes...)
	writer, reader := nodes[0], nodes[1]
	var sid string
	for i := 0; sid == ""; i++ {
		if id := fmt.Sprintf("tok%d", i); writer.Serves(id) {
			sid = id
		}
	}
	settleCluster(t, js, k, nodes)
	release, err := reader.HoldProjectionForTest()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	ctx := context.Background()
	cr, err := clients[0].CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{UserId: "tok-user"})
	if err != nil {
		t.Fatal(err)
	}
	seq, token := cr.GetResult().GetSeq(), cr.GetResult().GetConsistency()
	if want := consistency.Format(k, events.LogPartition(sid, k), seq); token != want {
		t.Fatalf("token %q, want %q", token, want)
	}
	listed := listedOn(t, serveOn(t, reader, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "tok-user", MinSeq: seq}))
	t.Logf("min_seq %d on a node that did not write it, its projection held: listed %v (a bare min_seq names no partition)", seq, listed)

	ch := serveOn(t, reader, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "tok-user", Consistency: token})
	select {
	case s := <-ch:
		t.Fatalf("consistency %s answered while the node's projection is held: %d %s", token, s.code, s.data)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if got := listedOn(t, ch); len(got) != 1 || got[0] != sid {
		t.Fatalf("consistency %s listed %v, want [%s]", token, got, sid)
	}
	eraseTokenReadOnAnotherNode(t, k, writer, reader, clients[0], js, nodes, sid)
}

// eraseTokenReadOnAnotherNode: the receipt of a user erase made on writer
// names, per partition, what the erase wrote (the removals of the user's
// sessions, in their partitions); a read on reader, whose projection is
// held, given that token waits and then no longer lists the sessions,
// where without it the node answers at once with the sessions still
// listed. sid is a session of user tok-user on writer.
func eraseTokenReadOnAnotherNode(t *testing.T, k int, writer, reader *node.Node, c *client.Client, js jetstream.JetStream, nodes []*node.Node, sid string) {
	t.Helper()
	ctx := context.Background()
	other := ""
	for i := 0; other == ""; i++ {
		if id := fmt.Sprintf("tok-other%d", i); events.LogPartition(id, k) != events.LogPartition(sid, k) {
			other = id
		}
	}
	if _, err := c.CreateSession(ctx, other, &memoryv1.CreateSessionRequest{UserId: "tok-user"}); err != nil {
		t.Fatal(err)
	}
	settleCluster(t, js, k, nodes)
	release, err := reader.HoldProjectionForTest()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	s := <-serveOn(t, writer, "mem.v1.user.tok-user.erase", &memoryv1.EraseRequest{Reason: "token test", CommandId: "erase-tok-user"})
	if s.code != 200 {
		t.Fatalf("erase: %d %s", s.code, s.data)
	}
	var rc memoryv1.EraseReceipt
	if err := protojson.Unmarshal(s.data, &rc); err != nil {
		t.Fatal(err)
	}
	set, err := consistency.Parse(rc.GetConsistency(), k)
	if err != nil {
		t.Fatalf("the receipt's consistency %q: %v", rc.GetConsistency(), err)
	}
	for _, id := range []string{sid, other} {
		if set.Seqs[events.LogPartition(id, k)] == 0 {
			t.Fatalf("the receipt's consistency %q names nothing in the partition of session %s (p%d)", rc.GetConsistency(), id, events.LogPartition(id, k))
		}
	}
	stale := listedOn(t, serveOn(t, reader, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "tok-user"}))
	t.Logf("without the token, on a node whose projection is held: listed %v", stale)
	ch := serveOn(t, reader, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "tok-user", Consistency: rc.GetConsistency()})
	select {
	case s := <-ch:
		t.Fatalf("consistency %s of the erase answered while the node's projection is held: %d %s", rc.GetConsistency(), s.code, s.data)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if got := listedOn(t, ch); len(got) != 0 {
		t.Fatalf("consistency %s of the erase listed %v, want none", rc.GetConsistency(), got)
	}
}

// Every read that takes min_seq takes consistency, and refuses a bad token
// with a 400 naming the field and the reason.
func TestConsistencyTokenRefused(t *testing.T) {
	n, nc := partitionedNode(t, 6, "")
	c := client.New(nc).WithTimeout(10 * time.Second)
	ctx := context.Background()
	cr, err := c.CreateSession(ctx, "bad", &memoryv1.CreateSessionRequest{UserId: "bad-user"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := c.AppendMessages(ctx, "bad", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "the heron"})
	if err != nil {
		t.Fatal(err)
	}
	put, err := c.Put(ctx, client.User("bad-user"), &memoryv1.PutEntryRequest{Key: "bird", Value: []byte("heron")})
	if err != nil {
		t.Fatal(err)
	}
	good := consistency.Merge(cr.GetResult().GetConsistency(), ap.GetResult().GetConsistency(), put.GetResult().GetConsistency())
	part := events.LogPartition("bad", 6)
	beyond := consistency.Format(6, part, ap.GetResult().GetSeq()+1000)
	reads := map[string]func(token string) error{
		"recall": func(tk string) error {
			_, err := c.Recall(ctx, "bad", &memoryv1.RecallRequest{Consistency: tk})
			return err
		},
		"search": func(tk string) error {
			_, err := c.Search(ctx, "bad", &memoryv1.SearchRequest{Query: "heron", Consistency: tk})
			return err
		},
		"promote": func(tk string) error {
			return servedErr(t, <-serveOn(t, n, "mem.v1.session.bad.promote", &memoryv1.PromoteRequest{MessageIds: ap.GetMessageIds(), Consistency: tk}))
		},
		"sessions.list": func(tk string) error {
			_, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "bad-user", Consistency: tk})
			return err
		},
		"search entries": func(tk string) error {
			_, err := c.SearchEntries(ctx, client.User("bad-user"), &memoryv1.SearchEntriesRequest{Query: "heron", Consistency: tk})
			return err
		},
	}
	for name, read := range reads {
		if err := read(good); err != nil {
			t.Fatalf("%s with %q: %v", name, good, err)
		}
		for _, bad := range []struct{ token, says string }{
			{"garbage", "want k<partitions>:p<partition>:<seq>"},
			{"k6:p1:0", "no sequence >= 1"},
			{"k1:p0:3", "is of a log in 1 partitions, this deployment's is in 6"},
			{"k6:p6:3", "names partition 6, the log's are 0..5"},
			{beyond, fmt.Sprintf("is beyond partition %d's last sequence (", part)},
		} {
			err := read(bad.token)
			var ce *client.Error
			if !asClientError(err, &ce) || ce.Code != 400 || ce.Field != "consistency" || !strings.Contains(ce.Message, bad.says) {
				t.Errorf("%s with %q: %v, want 400 consistency: ...%s...", name, bad.token, err, bad.says)
			}
		}
	}
}

// With the log in one stream the token is k1:p0:<result.seq>, and a read
// given it waits as one given min_seq does.
func TestConsistencyTokenOneStream(t *testing.T) {
	n, nc := partitionedNode(t, 1, "")
	c := client.New(nc).WithTimeout(10 * time.Second)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "one", &memoryv1.CreateSessionRequest{UserId: "one-user"}); err != nil {
		t.Fatal(err)
	}
	release, err := n.HoldProjectionForTest()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	cr, err := c.CreateSession(ctx, "two", &memoryv1.CreateSessionRequest{UserId: "one-user"})
	if err != nil {
		t.Fatal(err)
	}
	seq, token := cr.GetResult().GetSeq(), cr.GetResult().GetConsistency()
	if token != "k1:p0:"+strconv.FormatUint(seq, 10) {
		t.Fatalf("token %q, seq %d", token, seq)
	}
	byMinSeq := serveOn(t, n, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "one-user", MinSeq: seq})
	byToken := serveOn(t, n, "mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "one-user", Consistency: token})
	select {
	case s := <-byMinSeq:
		t.Fatalf("min_seq answered while the projection is held: %d %s", s.code, s.data)
	case s := <-byToken:
		t.Fatalf("consistency answered while the projection is held: %d %s", s.code, s.data)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	a, b := listedOn(t, byMinSeq), listedOn(t, byToken)
	if strings.Join(a, ",") != "one,two" || strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("min_seq listed %v, consistency %v; want [one two] both", a, b)
	}
	// Beyond the log: the same refusal, naming each its field.
	_, errSeq := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "one-user", MinSeq: seq + 1000})
	_, errTok := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "one-user", Consistency: consistency.Format(1, 0, seq+1000)})
	var es, et *client.Error
	if !asClientError(errSeq, &es) || !asClientError(errTok, &et) || es.Code != 400 || et.Code != 400 ||
		es.Field != "min_seq" || et.Field != "consistency" || es.Message != et.Message {
		t.Fatalf("beyond the log: min_seq %v, consistency %v", errSeq, errTok)
	}
	if _, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "one-user", Consistency: "k6:p0:1"}); client.Code(err) != 400 {
		t.Fatalf("a token of six partitions on one stream: %v", err)
	}
	// An erase's receipt: its removal_seq by another name.
	rc, err := c.EraseSession(ctx, "two", "token test")
	if err != nil {
		t.Fatal(err)
	}
	if want := consistency.Format(1, 0, rc.GetRemovalSeq()); rc.GetConsistency() != want {
		t.Fatalf("erase receipt's consistency %q, want %q", rc.GetConsistency(), want)
	}
}
