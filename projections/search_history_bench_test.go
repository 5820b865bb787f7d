package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/cpustat"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The history of BenchmarkSearchUserHistory: the shape of the api
// package's BenchmarkAppendAssemblyUserHistory (50 sessions of 600 user
// turns, generated conversations with tool calls and results: ~72k
// messages).
const (
	historyBenchSessions = 50
	historyBenchTurns    = 600
	historyBenchLimit    = 400 // segmented.MaxEarlierCandidates: a 32k budget asks for it
)

// historyConv generates conversation seed, cut after turns user messages
// (0: not cut, 32 sittings).
func historyConv(tb testing.TB, seed uint64, turns int) *convgen.Conversation {
	tb.Helper()
	cfg := convgen.DefaultConfig()
	cfg.Seed, cfg.Sittings = seed, 8
	if turns == 0 {
		cfg.Sittings = 32
	}
	conv, err := convgen.Generate(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if turns > 0 {
		n := 0
		for i, m := range conv.Messages {
			if m.Role == memoryv1.Role_ROLE_USER {
				if n == turns {
					conv.Messages = conv.Messages[:i]
					break
				}
				n++
			}
		}
	}
	return conv
}

// addConv appends the messages of conv to session sid, 64 a batch.
func (l *logBuilder) addConv(s *Store, sid string, conv *convgen.Conversation) {
	for i := 0; i < len(conv.Messages); i += 64 {
		e := &memoryv1.MessagesAppended{}
		for _, m := range conv.Messages[i:min(i+64, len(conv.Messages))] {
			l.msgSeq[sid]++
			n := l.msgSeq[sid]
			msg := &memoryv1.Message{
				Id: m.ID(), Seq: n, Role: m.Role, Content: m.Content, ToolCallId: m.ToolCallID,
				Tokens: uint32(len(m.Content)/4 + 1), CreatedUnixNano: m.UnixNano, SaidUnixNano: m.UnixNano,
			}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, &memoryv1.ToolCall{Id: c.Id, Name: c.Name, Arguments: c.Arguments})
			}
			e.Messages = append(e.Messages, msg)
		}
		l.add(sid, e)
		if len(l.recs) >= 256 {
			mustApply(l.t, s, l.recs)
			l.recs = l.recs[:0]
		}
	}
	mustApply(l.t, s, l.recs)
	l.recs = l.recs[:0]
}

// historyStore is a store holding user "u-history"'s sessions history-0 ..
// history-(sessions-1), and its session "current" holding the first 5,000
// messages of another conversation; it returns the user messages of that
// conversation after them (the queries of the assembler's cross-session
// search).
func historyStore(tb testing.TB, sessions, turns int) (*Store, []string) {
	tb.Helper()
	s := openTestStore(tb)
	l := newLogBuilder(tb)
	for i := range sessions {
		sid := fmt.Sprintf("history-%d", i)
		l.create(sid, "u-history", "")
		l.addConv(s, sid, historyConv(tb, uint64(100+i), turns))
	}
	conv := historyConv(tb, 7, 0)
	l.create("current", "u-history", "")
	cut := min(5000, len(conv.Messages)/2)
	rest := conv.Messages[cut:]
	conv.Messages = conv.Messages[:cut]
	l.addConv(s, "current", conv)
	var queries []string
	for _, m := range rest {
		if m.Role == memoryv1.Role_ROLE_USER && m.Content != "" {
			queries = append(queries, m.Content)
		}
	}
	return s, queries
}

// BenchmarkSearchUserHistory: the search the context assembler makes for
// each user message of a session of a user with a long history (~72k
// earlier messages): USER scope over the user's other sessions, with
// feedback, replies and the fill, 400 hits; the queries are the session's
// next user messages. Beside it, raw-plain-bm25: plain BM25 of the same
// queries over the same corpus (the engine alone).
func BenchmarkSearchUserHistory(b *testing.B) {
	s, queries := historyStore(b, historyBenchSessions, historyBenchTurns)
	for _, v := range []struct {
		name string
		opts SearchOptions
	}{
		{"raw-plain-bm25", SearchOptions{Plain: true, Corpus: &Corpus{User: "u-history", Except: "current"}}},
		{"assembler", SearchOptions{Corpus: &Corpus{User: "u-history", Except: "current", Fill: true, Feedback: true, Replies: true}}},
	} {
		b.Run(v.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			cpu := cpustat.Start()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, queries[i%len(queries)], historyBenchLimit, v.opts); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
			cpu.Report(b, b.N)
		})
	}
}
