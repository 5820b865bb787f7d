package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// harness is one directory on a real embedded NATS with JetStream.
type harness struct {
	dir   *Directory
	log   *events.JetStreamLog
	snaps *events.KVSnapshotStore
	codec *events.Codec
	nc    *nats.Conn
}

var testTokenizer = func() segmented.Tokenizer {
	tok, err := segmented.NewTokenizer()
	if err != nil {
		panic(err)
	}
	return tok
}()

func newHarness(t *testing.T, nc *nats.Conn, mutate func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, nc, events.DefaultJetStreamConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), mutate)
}

// newHarnessOn is newHarness on the stream lcfg, logging to logger.
func newHarnessOn(t *testing.T, nc *nats.Conn, lcfg events.JetStreamConfig, logger *slog.Logger, mutate func(*Config)) *harness {
	t.Helper()
	return newHarnessDeps(t, nc, lcfg, logger, mutate, nil)
}

// newHarnessDeps is newHarnessOn with deps (nil: none) changing the
// directory's dependencies.
func newHarnessDeps(t *testing.T, nc *nats.Conn, lcfg events.JetStreamConfig, logger *slog.Logger, mutate func(*Config), deps func(*Deps)) *harness {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log, err := events.NewJetStreamLog(ctx, js, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := events.NewKVSnapshotStore(ctx, js, "MEM_SNAPSHOTS", 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.StoreTimeout = 2 * time.Second
	cfg.RestartBackoff = 10 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	h := &harness{log: log, snaps: snaps, codec: events.NewCodec(), nc: nc}
	d := Deps{
		Log: log, Snapshots: snaps, Codec: h.codec, Tokenizer: testTokenizer,
		Logger: logger,
	}
	if deps != nil {
		deps(&d)
	}
	h.dir, err = New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.dir.Close(ctx)
	})
	return h
}

// call dispatches body (a request or a command such as *Append) and waits
// for the reply.
func (h *harness) call(t *testing.T, id string, body any) (proto.Message, error) {
	t.Helper()
	type result struct {
		m   proto.Message
		err error
	}
	ch := make(chan result, 1)
	if err := h.dir.Dispatch(id, nil, body, func(m proto.Message, err error) { ch <- result{m, err} }); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("no reply for %T on %s", body, id)
		return nil, nil
	}
}

func (h *harness) must(t *testing.T, id string, body proto.Message) proto.Message {
	t.Helper()
	m, err := h.call(t, id, body)
	if err != nil {
		t.Fatalf("%T on %s: %v", body, id, err)
	}
	return m
}

// fromLog rebuilds a session from the log alone (and, with snap, from its
// stored snapshot plus the tail).
func (h *harness) fromLog(t *testing.T, id string, useSnapshot bool) *segmented.State {
	t.Helper()
	ctx := context.Background()
	state := segmented.New()
	if useSnapshot {
		data, ok, err := h.snaps.Get(ctx, "session."+id)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			snap := &memoryv1.SessionSnapshot{}
			if err := proto.Unmarshal(data, snap); err != nil {
				t.Fatal(err)
			}
			state = segmented.FromSnapshot(snap)
		}
	}
	var recs []events.Record
	if _, err := h.log.Load(ctx, events.SessionSubject(id), state.LastSeq(), func(r events.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := Replay(h.codec, state, recs); err != nil {
		t.Fatal(err)
	}
	return state
}

func snapBytes(t *testing.T, s *memoryv1.SessionSnapshot) []byte {
	t.Helper()
	b, err := deterministic.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) live(t *testing.T, id string) []byte {
	t.Helper()
	s, err := h.dir.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return snapBytes(t, s)
}

func userMsg(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}
}

var words = strings.Fields("the revenue for March was 4200 dollars and Bob decided to ship version 7 after Alice asked why the deploy failed twice on Tuesday")

func sentence(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// randomCommand returns a random command for session state at turn i.
func randomCommand(r *rand.Rand, i int) proto.Message {
	switch k := r.IntN(20); {
	case k < 8:
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg(sentence(r, 5+r.IntN(60)) + "?")}}
	case k < 13:
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Role: memoryv1.Role_ROLE_ASSISTANT, Content: sentence(r, 5+r.IntN(120))}}}
	case k < 16:
		a, b := fmt.Sprintf("c%da", i), fmt.Sprintf("c%db", i)
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: a, Name: "sql", Arguments: `{"q":"select 1"}`}, {Id: b, Name: "search", Arguments: `{"q":"x"}`}}},
			{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: a, Content: sentence(r, 10+r.IntN(80))},
			{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: b, Content: sentence(r, 10+r.IntN(80))},
		}}
	case k < 17:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_SetFact{SetFact: &memoryv1.Fact{Key: "f" + strconv.Itoa(r.IntN(4)), Value: sentence(r, 4)}}}
	case k < 18:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_CacheSchema{CacheSchema: &memoryv1.SchemaEntry{Name: "t" + strconv.Itoa(r.IntN(14)), Schema: "create table x (a int)"}}}
	case k < 19:
		return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{SystemPrompt: "v" + strconv.Itoa(i) + " " + sentence(r, 6)}}}
	default:
		return &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_SET, Key: "session:k" + strconv.Itoa(r.IntN(3)), Value: []byte(sentence(r, 3))}
	}
}

// TestReplayEquality drives random command sequences through live actors and
// checks that the state rebuilt from the log, with and without the snapshot,
// and after passivation, equals the live state byte for byte.
func TestReplayEquality(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("AGENTMEM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (AGENTMEM_SEED=%d reproduces)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, func(c *Config) { c.SnapshotEvery = 5 })
	for s := range 6 {
		id := fmt.Sprintf("replay-%d", s)
		h.must(t, id, &memoryv1.CreateSessionRequest{SystemPrompt: "You are terse.", MaxContextTokens: 1500 + uint32(r.IntN(3000)), ReservedOutputTokens: 200})
		accepted := 0
		for i := range 40 + r.IntN(40) {
			if _, err := h.call(t, id, randomCommand(r, i)); err == nil {
				accepted++
			} else {
				var rej *segmented.Rejection
				if !errors.As(err, &rej) {
					t.Fatalf("command %d: %v", i, err)
				}
			}
		}
		live := h.live(t, id)
		if got := snapBytes(t, h.fromLog(t, id, false).Snapshot()); !proto.Equal(mustSnap(t, got), mustSnap(t, live)) || string(got) != string(live) {
			t.Fatalf("%s: state from the log differs from the live state (%d accepted commands)", id, accepted)
		}
		if got := snapBytes(t, h.fromLog(t, id, true).Snapshot()); string(got) != string(live) {
			t.Fatalf("%s: state from snapshot + tail differs from the live state", id)
		}
	}
}

func mustSnap(t *testing.T, b []byte) *memoryv1.SessionSnapshot {
	t.Helper()
	s := &memoryv1.SessionSnapshot{}
	if err := proto.Unmarshal(b, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPassivationAndRecovery checks an idle actor snapshots and stops, and
// that the next command finds the same state.
func TestPassivationAndRecovery(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond; c.SnapshotEvery = 1000 })
	h.must(t, "p1", &memoryv1.CreateSessionRequest{SystemPrompt: "sys"})
	for i := range 10 {
		h.must(t, "p1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("question " + strconv.Itoa(i))}})
	}
	before := h.live(t, "p1")
	deadline := time.Now().Add(5 * time.Second)
	for h.dir.Active() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("actor did not passivate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok, _ := h.snaps.Get(context.Background(), "session.p1"); !ok {
		t.Fatal("passivation wrote no snapshot")
	}
	if after := h.live(t, "p1"); string(after) != string(before) {
		t.Fatal("state after passivation differs")
	}
}

// TestIdempotentRetry checks a command id applied once answers duplicates.
func TestIdempotentRetry(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "i1", &memoryv1.CreateSessionRequest{})
	req := &memoryv1.AppendRequest{CommandId: "cmd-1", Messages: []*memoryv1.MessageInput{userMsg("once")}}
	first := h.must(t, "i1", req).(*memoryv1.AppendReply)
	second := h.must(t, "i1", req).(*memoryv1.AppendReply)
	if !second.GetResult().GetDuplicate() || second.GetResult().GetSeq() != first.GetResult().GetSeq() {
		t.Fatalf("retry = %v, first = %v", second.GetResult(), first.GetResult())
	}
	info := h.must(t, "i1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply)
	if info.GetSession().GetTotalMessages() != 1 {
		t.Fatalf("%d messages after a retried append", info.GetSession().GetTotalMessages())
	}
	// The same command id on another session is another command.
	h.must(t, "i2", &memoryv1.CreateSessionRequest{})
	other := h.must(t, "i2", req).(*memoryv1.AppendReply)
	if other.GetResult().GetDuplicate() {
		t.Fatal("a command id of session i1 deduplicated an append of session i2")
	}
}

// TestConflictBetweenWriters runs two directories (two nodes) on one stream:
// the stale one hits the expected-sequence fence, reloads, decides again.
func TestConflictBetweenWriters(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	a := newHarness(t, nc, nil)
	b := newHarness(t, nc, nil)
	a.must(t, "c1", &memoryv1.CreateSessionRequest{})
	b.must(t, "c1", &memoryv1.GetSessionRequest{}) // b activates at version 1
	a.must(t, "c1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("from a")}})
	rep := b.must(t, "c1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("from b")}}).(*memoryv1.AppendReply)
	if rep.GetResult().GetVersion() != 3 {
		t.Fatalf("b's append landed at version %d, want 3 after reloading", rep.GetResult().GetVersion())
	}
	if got, want := snapBytes(t, a.fromLog(t, "c1", false).Snapshot()), b.live(t, "c1"); string(got) != string(want) {
		t.Fatal("b's state differs from the log after the conflict")
	}
}

// TestStorageFailure stops NATS under the actor: the append answers
// ErrUnavailable and nothing is applied; after NATS returns the actor has
// recovered from the log.
func TestStorageFailure(t *testing.T) {
	cfg := natsembed.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:-1"
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.ClientURL()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	h := newHarness(t, nc, func(c *Config) { c.StoreTimeout = 300 * time.Millisecond })
	h.must(t, "f1", &memoryv1.CreateSessionRequest{})
	h.must(t, "f1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("stored")}})
	before := h.live(t, "f1")

	srv.Shutdown()
	_, err = h.call(t, "f1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("lost")}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append with NATS down: %v, want ErrUnavailable", err)
	}
	cfg.Listen = strings.TrimPrefix(url, "nats://")
	srv, err = natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := h.dir.Snapshot(context.Background(), "f1")
		if err == nil {
			if got := snapBytes(t, s); string(got) != string(before) {
				t.Fatal("state after the failed append differs from the stored state")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.must(t, "f1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("after")}})
	if got := h.fromLog(t, "f1", false).Info().GetTotalMessages(); got != 2 {
		t.Fatalf("log holds %d messages, want 2 (the failed append must not be there)", got)
	}
}

// TestCommandRing: the ring finds what it holds, forgets what fell out,
// and names its oldest sequence, before and after it wraps.
func TestCommandRing(t *testing.T) {
	var r commandRing
	if _, ok := r.lookup("a"); ok || r.oldest() != 0 {
		t.Fatal("empty ring found something")
	}
	for i := 1; i <= ringSize+10; i++ {
		if got := r.covers(uint64(i - 1)); got != (i-1 <= ringSize) {
			t.Fatalf("after %d keys: covers(%d) = %v", i-1, i-1, got)
		}
		if i > 1 && r.covers(uint64(i)) {
			t.Fatalf("after %d keys: covers a version beyond them", i-1)
		}
		var digest []byte
		if i%2 == 1 {
			digest = CommandDigest(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg(fmt.Sprint(i))}})
		}
		r.add(fmt.Sprintf("c%d", i), digest, uint64(i), uint64(100+i))
		if i == 3 {
			if got, ok := r.lookup("c2"); !ok || got.GetSeq() != 102 || r.oldest() != 101 {
				t.Fatalf("before wrapping: %v %v oldest %d", got, ok, r.oldest())
			}
		}
	}
	if _, ok := r.lookup("c10"); ok {
		t.Fatal("a key that fell out of the ring was found")
	}
	if got, ok := r.lookup("c11"); !ok || got.GetVersion() != 11 || r.oldest() != 111 {
		t.Fatalf("after wrapping: %v %v oldest %d", got, ok, r.oldest())
	}
	// The digest kept with a key comes back with it; a key added without
	// one has none.
	want := CommandDigest(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("11")}})
	if got, _ := r.lookup("c11"); !bytes.Equal(got.GetDigest(), want) || len(want) != DigestSize {
		t.Fatalf("c11 digest %x, want %x", got.GetDigest(), want)
	}
	if got, _ := r.lookup("c12"); got.GetDigest() != nil {
		t.Fatalf("c12 was added without a digest, lookup has %x", got.GetDigest())
	}
	if got, ok := r.lookup(fmt.Sprintf("c%d", ringSize+10)); !ok || got.GetSeq() != uint64(100+ringSize+10) {
		t.Fatalf("newest: %v %v", got, ok)
	}
}
