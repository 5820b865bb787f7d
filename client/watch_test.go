package client_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestMain checks that no test of this package (watches included) leaves a
// goroutine behind once its node is stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Upstream race in nats.go v1.55 jetstream (see largedata/main_test.go):
		// ObjectStore.Put (PutData here) can leave this goroutine blocked.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
	)
}

// startForTest is node.StartForTest, returning once the memory service
// answers: node.Start returns before the server has surely registered the
// service's subscriptions (no flush), so a first request can meet "no
// responders".
func startForTest(t *testing.T) *nats.Conn {
	t.Helper()
	_, nc := node.StartForTest(t, nil)
	waitServing(nc)
	return nc
}

// waitServing waits until the memory service answers $SRV.PING.
func waitServing(nc *nats.Conn) {
	for range 100 {
		if _, err := nc.Request("$SRV.PING.memory", nil, 100*time.Millisecond); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func userMsg(s string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: s}
}

// appendN creates session id (when create is set) and appends n messages,
// returning the stream sequence of each command, creation first.
func appendN(t *testing.T, c *client.Client, id string, create bool, n int) []uint64 {
	t.Helper()
	ctx := context.Background()
	var seqs []uint64
	if create {
		rep, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1", MaxContextTokens: 100000})
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		seqs = append(seqs, rep.GetResult().GetSeq())
	}
	for i := range n {
		rep, err := c.AppendMessages(ctx, id, userMsg(id+" message "+strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("append %s #%d: %v", id, i, err)
		}
		seqs = append(seqs, rep.GetResult().GetSeq())
		// The sections of a user message are decided after its append, in
		// a batch of their own (cross-session recall finds the other
		// session of u1): the context read waits for it.
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatalf("context %s #%d: %v", id, i, err)
		}
		if s := cx.GetSeq(); s > rep.GetResult().GetSeq() {
			seqs = append(seqs, s)
		}
	}
	return seqs
}

// collect reads n changes from w, failing after timeout.
func collect(t *testing.T, w *client.Watch, n int, timeout time.Duration) []client.Change {
	t.Helper()
	var got []client.Change
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case ch, ok := <-w.Changes():
			if !ok {
				t.Fatalf("watch ended after %d of %d changes: %v", len(got), n, w.Err())
			}
			got = append(got, ch)
		case <-deadline:
			t.Fatalf("got %d of %d changes in %v", len(got), n, timeout)
		}
	}
	return got
}

// expectQuiet checks that w delivers nothing more for a while.
func expectQuiet(t *testing.T, w *client.Watch) {
	t.Helper()
	select {
	case ch, ok := <-w.Changes():
		if ok {
			t.Fatalf("unexpected change seq %d on %s", ch.Seq, ch.Subject)
		}
		t.Fatalf("watch ended: %v", w.Err())
	case <-time.After(300 * time.Millisecond):
	}
}

// appended reports whether ch is an append (its batch has MessagesAppended;
// the first append of a session also activates it).
func appended(ch client.Change) bool {
	for _, ev := range ch.Events {
		if _, ok := ev.(*memoryv1.MessagesAppended); ok {
			return true
		}
	}
	return false
}

func seqsOf(chs []client.Change) []uint64 {
	out := make([]uint64, len(chs))
	for i, ch := range chs {
		out[i] = ch.Seq
	}
	return out
}

func TestWatchFromSequence(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	seqs := appendN(t, c, "a", true, 5) // create + 5 appends

	for _, from := range []int{-1, 0, 2, 5} { // index into seqs; -1 = from the beginning
		var fromSeq uint64
		if from >= 0 {
			fromSeq = seqs[from]
		}
		t.Run("after "+strconv.FormatUint(fromSeq, 10), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := c.Watch(ctx, client.WatchSession("a"), fromSeq)
			if err != nil {
				t.Fatal(err)
			}
			want := seqs[from+1:]
			got := collect(t, w, len(want), 10*time.Second)
			if !slices.Equal(seqsOf(got), want) {
				t.Fatalf("seqs = %v, want %v", seqsOf(got), want)
			}
			expectQuiet(t, w)
			for i, ch := range got {
				if ch.Subject != "mem.ev.session.a" || ch.Kind != "session" || ch.ID != "a" {
					t.Fatalf("change %d: subject %q kind %q id %q", i, ch.Subject, ch.Kind, ch.ID)
				}
				if ch.CommandID == "" || ch.Time.IsZero() || len(ch.Events) == 0 {
					t.Fatalf("change %d incomplete: %+v", i, ch)
				}
				if ch.Seq == seqs[0] {
					if _, ok := ch.Events[0].(*memoryv1.SessionCreated); !ok {
						t.Fatalf("creation event is %T", ch.Events[0])
					}
					continue
				}
				if !appended(ch) {
					t.Fatalf("change %d: events %v, want a *memoryv1.MessagesAppended", i, ch.Events)
				}
			}
			// Live changes follow the stored ones, in order.
			more := appendN(t, c, "a", false, 2)
			got = collect(t, w, 2, 10*time.Second)
			if !slices.Equal(seqsOf(got), more) {
				t.Fatalf("live seqs = %v, want %v", seqsOf(got), more)
			}
			seqs = append(seqs, more...)
			cancel()
			for range w.Changes() {
			}
			if err := w.Err(); err != nil {
				t.Fatalf("Err after cancel = %v, want nil", err)
			}
		})
	}
}

func TestWatchFilterIsolatesAggregates(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wa, err := c.Watch(ctx, client.WatchSession("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	wall, err := c.Watch(ctx, client.WatchAll, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqA, all []uint64
	for i := range 3 {
		sa := appendN(t, c, "a", i == 0, 1)
		sb := appendN(t, c, "b", i == 0, 1)
		seqA = append(seqA, sa...)
		all = append(all, sa...)
		all = append(all, sb...)
	}
	got := collect(t, wa, len(seqA), 10*time.Second)
	if !slices.Equal(seqsOf(got), seqA) {
		t.Fatalf("WatchSession(a) seqs = %v, want %v", seqsOf(got), seqA)
	}
	for _, ch := range got {
		if ch.ID != "a" {
			t.Fatalf("WatchSession(a) delivered %s", ch.Subject)
		}
	}
	expectQuiet(t, wa)
	if got := collect(t, wall, len(all), 10*time.Second); !slices.Equal(seqsOf(got), all) {
		t.Fatalf("WatchAll seqs = %v, want %v", seqsOf(got), all)
	}
}

func TestWatchCancelStopsEverything(t *testing.T) {
	before := goleak.IgnoreCurrent()
	n, nc := node.StartForTest(t, nil)
	waitServing(nc)
	c := client.New(nc)
	appendN(t, c, "a", true, 3)

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	consumers := func() int {
		info, err := js.Stream(context.Background(), events.StreamName)
		if err != nil {
			t.Fatal(err)
		}
		return info.CachedInfo().State.Consumers
	}
	base := consumers() // the node's projector

	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, client.WatchSession("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, w, 1, 10*time.Second) // the reader stops early: the watch is blocked on a send
	if got := consumers(); got != base+1 {
		t.Fatalf("consumers while watching = %d, want %d", got, base+1)
	}
	cancel()
	select {
	case <-drained(w):
	case <-time.After(10 * time.Second):
		t.Fatal("Changes not closed 10s after cancel")
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	if got := consumers(); got != base {
		t.Fatalf("consumers after cancel = %d, want %d (the watch deletes its consumer)", got, base)
	}

	nc.Close()
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}

// drained is closed once w.Changes is closed (the rest is discarded).
func drained(w *client.Watch) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.Changes() {
		}
	}()
	return done
}

func TestWatchSlowReaderGetsEverything(t *testing.T) {
	const appends = 500
	nc := startForTest(t)
	c := client.New(nc)
	create := appendN(t, c, "slow", true, 0)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Watch(ctx, client.WatchSession("slow"), create[0])
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		seqs []uint64
		err  error
	}
	wrote := make(chan result, 1)
	go func() {
		var r result
		for i := range appends {
			rep, err := c.AppendMessages(context.Background(), "slow", userMsg("m"+strconv.Itoa(i)))
			if err != nil {
				r.err = err
				break
			}
			r.seqs = append(r.seqs, rep.GetResult().GetSeq())
		}
		wrote <- r
	}()

	var got []uint64
	for len(got) < appends {
		select {
		case ch, ok := <-w.Changes():
			if !ok {
				t.Fatalf("watch ended after %d changes: %v", len(got), w.Err())
			}
			if !appended(ch) {
				continue // a command of the node's own (summaries), not an append
			}
			got = append(got, ch.Seq)
			time.Sleep(2 * time.Millisecond) // the slow reader
		case <-time.After(30 * time.Second):
			t.Fatalf("got %d of %d appends", len(got), appends)
		}
	}
	r := <-wrote
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !slices.Equal(got, r.seqs) {
		t.Fatalf("watched %d appends, wrote %d; first difference at %d", len(got), len(r.seqs), firstDiff(got, r.seqs))
	}
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// appendEntry writes one EntryChanged batch straight to the log on subject,
// as an agent actor would.
func appendEntry(t *testing.T, nc *nats.Conn, id string, e *memoryv1.Entry) uint64 {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	log, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := events.NewCodec().Pack([]proto.Message{&memoryv1.EntryChanged{Entry: e}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId: "put-" + id, AggregateKind: events.KindAgent, AggregateId: id,
		Version: 1, TimeUnixNano: time.Now().UnixNano(), Events: evs,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Append(ctx, events.AgentSubject(id), 0, "put-"+id, data)
	if err != nil {
		t.Fatal(err)
	}
	return res.Seq
}

func zstdBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func TestWatchDecompressesEntries(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	original := []byte(fmt.Sprintf("%0500d and some notes, repeated: %0500d", 7, 7))
	seq := appendEntry(t, nc, "x", &memoryv1.Entry{
		Key: "notes", Value: zstdBytes(t, original), Compressed: true, Size: uint32(len(original)), Version: 1,
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Watch(ctx, client.WatchAgent("x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ch := collect(t, w, 1, 10*time.Second)[0]
	if ch.Seq != seq || ch.Kind != "agent" || ch.ID != "x" || ch.Version != 1 {
		t.Fatalf("change = seq %d kind %q id %q version %d, want seq %d agent x 1", ch.Seq, ch.Kind, ch.ID, ch.Version, seq)
	}
	ec, ok := ch.Events[0].(*memoryv1.EntryChanged)
	if !ok {
		t.Fatalf("event %T, want *memoryv1.EntryChanged", ch.Events[0])
	}
	e := ec.GetEntry()
	if e.GetCompressed() || string(e.GetValue()) != string(original) || e.GetSize() != uint32(len(original)) {
		t.Fatalf("entry compressed=%v size=%d value %d bytes, want the %d original bytes", e.GetCompressed(), e.GetSize(), len(e.GetValue()), len(original))
	}
}

func TestWatchEndsOnBadCompressedSize(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	original := make([]byte, 4096)
	// The value inflates to 4096 bytes but claims 100: the watch must not
	// produce more than 100 bytes, and ends with an error.
	appendEntry(t, nc, "y", &memoryv1.Entry{Key: "k", Value: zstdBytes(t, original), Compressed: true, Size: 100})

	w, err := c.Watch(context.Background(), client.WatchAgent("y"), 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ch, ok := <-w.Changes():
		if ok {
			t.Fatalf("delivered a change with a bad size: seq %d", ch.Seq)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end")
	}
	if w.Err() == nil {
		t.Fatal("Err = nil, want a size error")
	}
}

func ExampleClient_Watch() {
	nc, stop := startNode()
	defer stop()
	waitServing(nc)
	c := client.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if _, err := c.CreateSession(ctx, "s1", nil); err != nil {
		panic(err)
	}
	// Watch session s1 from the beginning; pass the Seq of the last change
	// handled to resume after it.
	w, err := c.Watch(ctx, client.WatchSession("s1"), 0)
	if err != nil {
		panic(err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hello"}); err != nil {
		panic(err)
	}
	for ch := range w.Changes() {
		var names []string
		for _, ev := range ch.Events {
			names = append(names, string(proto.MessageName(ev).Name()))
		}
		fmt.Println(ch.Kind, ch.ID, ch.Version, names)
		if ch.Version == 2 {
			cancel() // Changes closes once the watch stopped
		}
	}
	if err := w.Err(); err != nil {
		panic(err)
	}
	// Output:
	// session s1 1 [SessionCreated]
	// session s1 2 [SessionStatusChanged MessagesAppended]
}
