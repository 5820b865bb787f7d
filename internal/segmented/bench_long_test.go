package segmented

import (
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// longSession returns a session holding n messages verbatim in L1 (turns of
// user, assistant with a tool call, tool result, assistant), with a budget
// large enough that nothing is compressed.
func longSession(b *testing.B, n int) *State {
	b.Helper()
	s := mustCreate(b, &memoryv1.CreateSessionRequest{SystemPrompt: "You are a data assistant.", MaxContextTokens: 4_000_000, ReservedOutputTokens: 2000})
	env := testEnv(b)
	for i := 0; len(s.snap.GetL1()) < n; i++ {
		id := fmt.Sprintf("c%d", i)
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Id: fmt.Sprintf("u%d", i), Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("Turn %d: how many orders did Alice place in region %d?", i, i%7)},
			assistant("", call(id, "sql")),
			toolResult(id, fmt.Sprintf("row %d, row %d", i, i+1)),
			assistant(fmt.Sprintf("Alice placed %d orders in region %d.", i*3, i%7)),
		}}, env)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Apply(Meta{Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(s.snap.GetL1()); got != n || s.snap.GetCompressions() != 0 {
		b.Fatalf("%d L1 entries, %d compressions", got, s.snap.GetCompressions())
	}
	return s
}

// BenchmarkDecideAppendLongSession decides a one-message append on a
// session with 5,000 messages in L1: the cost must not grow with L1.
func BenchmarkDecideAppendLongSession(b *testing.B) {
	s := longSession(b, 5000)
	req := &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Id: "q-new", Role: memoryv1.Role_ROLE_USER, Content: "And how many did Bob place in region 3?"}}}
	env := testEnv(b)
	for b.Loop() {
		if _, err := s.DecideAppend(req, env); err != nil {
			b.Fatal(err)
		}
	}
}

type storedBatch struct {
	meta Meta
	evs  []proto.Message
}

// batches1000 decides 1,000 batches (200 turns as in session200 at first,
// then more, with compression under the default budget) and returns them as
// read back from the log.
func batches1000(b *testing.B) []storedBatch {
	b.Helper()
	env := testEnv(b)
	s := New()
	var out []storedBatch
	commitB := func(cmd string, evs []proto.Message) {
		meta := Meta{CommandID: cmd, Version: s.Version() + 1, Seq: s.LastSeq() + 1, TimeUnixNano: int64(s.Version()+1) * 1000}
		if err := s.Apply(meta, evs); err != nil {
			b.Fatal(err)
		}
		out = append(out, storedBatch{meta, roundTrip(b, evs)})
	}
	evs, err := s.DecideCreate(&memoryv1.CreateSessionRequest{SystemPrompt: "You are a data assistant.", MaxContextTokens: 32000, ReservedOutputTokens: 2000}, "replay", env)
	if err != nil {
		b.Fatal(err)
	}
	commitB("create", evs)
	for i := 0; len(out) < 1000; i++ {
		var msgs []*memoryv1.MessageInput
		if i%2 == 0 {
			id := fmt.Sprintf("c%d", i)
			msgs = []*memoryv1.MessageInput{
				user(fmt.Sprintf("Turn %d: how many orders did Alice place in region %d?", i, i%7)),
				assistant("", call(id, "sql")),
				toolResult(id, strings.Repeat(fmt.Sprintf("row %d, ", i), 10)),
			}
		} else {
			msgs = []*memoryv1.MessageInput{assistant(fmt.Sprintf("Alice placed %d orders in region %d.", i*3, i%7))}
		}
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, env)
		if err != nil {
			b.Fatal(err)
		}
		commitB(fmt.Sprintf("cmd-%d", i), evs)
	}
	return out
}

// BenchmarkReplay1000 applies 1,000 stored batches to a new State, as a cold
// activation without a snapshot does.
func BenchmarkReplay1000(b *testing.B) {
	batches := batches1000(b)
	for b.Loop() {
		s := New()
		for _, bt := range batches {
			if err := s.Apply(bt.meta, bt.evs); err != nil {
				b.Fatal(err)
			}
		}
	}
}
