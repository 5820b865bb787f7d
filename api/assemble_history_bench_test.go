package api_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkAppendAssemblyUserHistory measures the append of a user message
// to a long session of a user with a long history, on one node (embedded
// NATS, bbolt projection), with the context assembler on and off:
//
//	go test -run '^$' -bench AppendAssemblyUserHistory -benchtime=300x ./api/
//
// The user has historySessions other sessions of historyTurns user turns
// each (generated conversations: replies with tool calls and bulky
// results; no assembly, so they take no search while they are written)
// and 20 entries in the user scope. Two sessions of the same user then
// take the same first historyMessages messages of another conversation:
// "assembled" with the default assembly, "plain" with it off; both under a
// 32k budget, so both have compressed (L1, L2 and swap as a long session
// has them). Each iteration appends the conversation's next user message
// to both (the order alternating) and times each append, then appends the
// reply (untimed). What the assembler does for that message — the
// session's search, the scopes', and any other search it makes (the user's
// other sessions) — is in the assembled figures. Reported: p50 and p99 of
// each, and their ratios; and the same for the append followed by the
// read of its context (the sections are decided after the append is
// answered, and a context read waits for them: see actors.Later); and the
// p99 of each over the iterations where neither append compressed
// (-nocomp; iters-compressed counts the others): compression (summaries,
// condensing: ~10 ms at ~650 L1 entries) is the tail of both sessions'
// appends, and which iterations it falls on moves with the token counts. The setup (some 80,000 messages) takes minutes:
// it runs under -bench only. AGENTMEM_BENCH_CPUPROFILE=<file> writes a CPU
// profile of the timed appends alone.
func BenchmarkAppendAssemblyUserHistory(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc).WithTimeout(time.Minute)
	waitServing(b, c)
	ctx := context.Background()
	run := benchSessionSeq.Add(1)
	user := fmt.Sprintf("u-history-%d", run)
	var history uint64
	for i := range historySessions {
		conv := mustConv(b, uint64(100+i), historyTurns)
		id := fmt.Sprintf("history-%d-%d", run, i)
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, Assembly: &memoryv1.AssemblyConfig{}}); err != nil {
			b.Fatal(err)
		}
		appendConv(b, c, id, conv, len(conv.Messages))
		info, err := c.Get(ctx, id)
		if err != nil || info.GetTurn() != historyTurns {
			b.Fatalf("%s: %d turns, want %d (%v)", id, info.GetTurn(), historyTurns, err)
		}
		history += info.GetTotalMessages()
	}
	for i := range 20 {
		if _, err := c.Put(ctx, client.User(user), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("fact-%d", i),
			Value: fmt.Appendf(nil, "The user's preference number %d is to keep the Orion migration budget under %d EUR.", i, 40000+i*250)}); err != nil {
			b.Fatal(err)
		}
	}
	conv := mustConv(b, 7, 0)
	ids := map[string]string{}
	for _, v := range []struct {
		name     string
		assembly *memoryv1.AssemblyConfig
	}{{"assembled", nil}, {"plain", &memoryv1.AssemblyConfig{}}} {
		ids[v.name] = fmt.Sprintf("history-%s-%d", v.name, run)
		if _, err := c.CreateSession(ctx, ids[v.name], &memoryv1.CreateSessionRequest{UserId: user,
			MaxContextTokens: 32000, ReservedOutputTokens: 2000, Assembly: v.assembly}); err != nil {
			b.Fatal(err)
		}
	}
	next := appendConv(b, c, ids["assembled"], conv, historyMessages)
	appendConv(b, c, ids["plain"], conv, historyMessages)
	for _, id := range ids {
		// The shape the figures are for: a long session, compressed.
		info, err := c.Get(ctx, id)
		if err != nil || info.GetTotalMessages() < historyMessages || info.GetCompressions() == 0 {
			b.Fatalf("%s: %d messages, %d compressions, want >= %d and some (%v)", id, info.GetTotalMessages(), info.GetCompressions(), historyMessages, err)
		}
	}
	waitProjected(b, c, ids["plain"])
	k := next // the sub-benchmark runs more than once: the sessions go on
	b.Run("interleaved", func(b *testing.B) {
		if path := os.Getenv("AGENTMEM_BENCH_CPUPROFILE"); path != "" {
			// A profile of the appends only, without the setup.
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		var asm, plain, asmCtx, plainCtx []time.Duration
		// Of the iterations where neither session's append compressed:
		// compression (summaries, condensing) is the tail of every long
		// session's appends, assembled or not, and which iterations it
		// falls on depends on the token counts.
		var asmQuiet, plainQuiet []time.Duration
		compressed := 0
		for i := range b.N {
			if k >= len(conv.Appends) {
				b.Fatalf("the conversation has %d appends: run fewer iterations", len(conv.Appends))
			}
			u := conv.Appends[k]
			reply := &memoryv1.AppendRequest{}
			for k++; k < len(conv.Appends) && conv.Messages[conv.Appends[k].Start].Role != memoryv1.Role_ROLE_USER; k++ {
				reply.Messages = append(reply.Messages, spanInputs(conv, conv.Appends[k])...)
			}
			order := []string{"assembled", "plain"}
			if i%2 == 1 {
				slices.Reverse(order)
			}
			took, squeezed := map[string]time.Duration{}, false
			for _, name := range order {
				if os.Getenv("AGENTMEM_BENCH_SETTLE") != "" {
					time.Sleep(20 * time.Millisecond)
				}
				req := &memoryv1.AppendRequest{Messages: spanInputs(conv, u)}
				t0 := time.Now()
				rep, err := c.Append(ctx, ids[name], req)
				if err != nil {
					b.Fatalf("%s: append %d: %v", name, k, err)
				}
				d := time.Since(t0)
				took[name], squeezed = d, squeezed || rep.GetCompressions() > 0
				// Then the context the model is sent for that message:
				// the assembled session's holds the sections, decided
				// after the append was answered.
				if _, err := c.Context(ctx, ids[name]); err != nil {
					b.Fatalf("%s: context %d: %v", name, k, err)
				}
				dc := time.Since(t0)
				if name == "assembled" {
					asm, asmCtx = append(asm, d), append(asmCtx, dc)
				} else {
					plain, plainCtx = append(plain, d), append(plainCtx, dc)
				}
			}
			if squeezed {
				compressed++
			} else {
				asmQuiet, plainQuiet = append(asmQuiet, took["assembled"]), append(plainQuiet, took["plain"])
			}
			if len(reply.Messages) > 0 {
				for _, name := range order {
					if _, err := c.Append(ctx, ids[name], reply); err != nil {
						b.Fatalf("%s: reply %d: %v", name, k, err)
					}
				}
			}
		}
		b.StopTimer()
		a50, a99 := percentiles(asm)
		p50, p99 := percentiles(plain)
		b.ReportMetric(float64(a50.Microseconds()), "asm-p50-µs")
		b.ReportMetric(float64(a99.Microseconds()), "asm-p99-µs")
		b.ReportMetric(float64(p50.Microseconds()), "plain-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), "plain-p99-µs")
		b.ReportMetric(float64(a50)/float64(p50), "p50-ratio")
		b.ReportMetric(float64(a99)/float64(p99), "p99-ratio")
		ac50, ac99 := percentiles(asmCtx)
		pc50, pc99 := percentiles(plainCtx)
		b.ReportMetric(float64(ac50.Microseconds()), "asm+ctx-p50-µs")
		b.ReportMetric(float64(ac99.Microseconds()), "asm+ctx-p99-µs")
		b.ReportMetric(float64(pc50.Microseconds()), "plain+ctx-p50-µs")
		b.ReportMetric(float64(pc99.Microseconds()), "plain+ctx-p99-µs")
		b.ReportMetric(float64(history), "history-msgs")
		_, aq99 := percentiles(asmQuiet)
		_, pq99 := percentiles(plainQuiet)
		b.ReportMetric(float64(aq99.Microseconds()), "asm-p99-nocomp-µs")
		b.ReportMetric(float64(pq99.Microseconds()), "plain-p99-nocomp-µs")
		if pq99 > 0 {
			b.ReportMetric(float64(aq99)/float64(pq99), "p99-nocomp-ratio")
		}
		b.ReportMetric(float64(compressed), "iters-compressed")
	})
}

// The history of BenchmarkAppendAssemblyUserHistory.
const (
	historySessions = 50
	historyTurns    = 600
	historyMessages = 5000
)

// mustConv generates a conversation of seed; with turns > 0, cut after
// that many user messages.
func mustConv(b *testing.B, seed uint64, turns int) *convgen.Conversation {
	b.Helper()
	cfg := convgen.DefaultConfig()
	cfg.Seed, cfg.Sittings = seed, 8
	if turns == 0 {
		cfg.Sittings = 32 // historyMessages and then some for the iterations
	}
	conv, err := convgen.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if turns > 0 {
		n := 0
		for i, a := range conv.Appends {
			if conv.Messages[a.Start].Role == memoryv1.Role_ROLE_USER {
				if n == turns {
					conv.Appends, conv.Messages = conv.Appends[:i], conv.Messages[:a.Start]
					break
				}
				n++
			}
		}
		if n < turns {
			b.Fatalf("seed %d: %d user turns, want %d", seed, n, turns)
		}
	}
	return conv
}

func spanInputs(conv *convgen.Conversation, a convgen.Span) []*memoryv1.MessageInput {
	var out []*memoryv1.MessageInput
	for j := a.Start; j < a.End; j++ {
		out = append(out, conv.Messages[j].Input())
	}
	return out
}

// appendConv appends the conversation's appends while they start before
// message upTo, several at a time (at most 64 messages per request), and
// returns the index of the first append not made; it stops before a user
// message.
func appendConv(b *testing.B, c *client.Client, id string, conv *convgen.Conversation, upTo int) int {
	b.Helper()
	ctx := context.Background()
	req := &memoryv1.AppendRequest{}
	flush := func() {
		if len(req.Messages) == 0 {
			return
		}
		if _, err := c.Append(ctx, id, req); err != nil {
			b.Fatalf("%s: %v", id, err)
		}
		req = &memoryv1.AppendRequest{}
	}
	k := 0
	for ; k < len(conv.Appends); k++ {
		a := conv.Appends[k]
		if a.Start >= upTo && conv.Messages[a.Start].Role == memoryv1.Role_ROLE_USER {
			break
		}
		if len(req.Messages)+a.End-a.Start > 64 {
			flush()
		}
		req.Messages = append(req.Messages, spanInputs(conv, a)...)
	}
	flush()
	return k
}

// waitProjected waits until the projection applied the client's writes (a
// search waits for them, for at most its min_seq bound: again until it
// does not time out).
func waitProjected(b *testing.B, c *client.Client, id string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, err := c.Search(context.Background(), id, &memoryv1.SearchRequest{Query: "budget", Limit: 1})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the projection does not catch up: %v", err)
		}
	}
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	lat = slices.Clone(lat)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	return pct(0.50), pct(0.99)
}
