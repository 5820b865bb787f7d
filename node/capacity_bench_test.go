package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/convgen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkCapacity measures what one node's log partition costs per
// message, the figures docs/SCALING.md adds up:
//
//	go test -run '^$' -bench Capacity -benchtime=1x ./node/
//
// capacitySessions users each hold one long generated conversation (tool
// calls, bulky results), appended as a client does: each user message
// with the replies before it, one request each, from capacitySessions
// writers at once. Reported: appends/s and messages/s acknowledged, the
// time until the projection has applied the last of them, the log's
// bytes and events per message (JetStream's own count), the projection
// file's bytes per message, and the p50/p99 of a user-scope search and of
// a session search over what was written.
func BenchmarkCapacity(b *testing.B) {
	for _, k := range []int{1, 6} {
		b.Run(fmt.Sprintf("partitions=%d", k), func(b *testing.B) {
			for range b.N {
				benchCapacity(b, k)
			}
		})
	}
}

const capacitySessions = 8

func benchCapacity(b *testing.B, partitions int) {
	n, nc := StartForTest(b, func(c *Config) {
		c.LogPartitions = partitions
		if partitions > 1 {
			c.LogWindow = 0 // the bounded log is not served with partitions
		}
	})
	c := client.New(nc).WithTimeout(time.Minute)
	ctx := context.Background()
	type job struct {
		id   string
		reqs []*memoryv1.AppendRequest
	}
	var jobs []job
	messages := 0
	for i := range capacitySessions {
		cfg := convgen.DefaultConfig()
		cfg.Seed, cfg.Sittings = uint64(500+i), 16
		conv, err := convgen.Generate(cfg)
		if err != nil {
			b.Fatal(err)
		}
		j := job{id: fmt.Sprintf("cap-%d", i)}
		if _, err := c.CreateSession(ctx, j.id, &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("user-%d", i)}); err != nil {
			b.Fatal(err)
		}
		req := &memoryv1.AppendRequest{}
		for _, a := range conv.Appends {
			if conv.Messages[a.Start].Role == memoryv1.Role_ROLE_USER && len(req.Messages) > 0 {
				j.reqs, req = append(j.reqs, req), &memoryv1.AppendRequest{}
			}
			for k := a.Start; k < a.End; k++ {
				req.Messages = append(req.Messages, conv.Messages[k].Input())
			}
		}
		j.reqs = append(j.reqs, req)
		for _, r := range j.reqs {
			messages += len(r.Messages)
		}
		jobs = append(jobs, j)
	}
	appends := 0
	for _, j := range jobs {
		appends += len(j.reqs)
	}
	b.ResetTimer()
	start := time.Now()
	errs := make(chan error, len(jobs))
	last := make(chan uint64, len(jobs))
	for _, j := range jobs {
		go func() {
			var seq uint64
			for _, r := range j.reqs {
				rep, err := c.Append(ctx, j.id, r)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", j.id, err)
					return
				}
				seq = max(seq, rep.GetResult().GetSeq())
			}
			last <- seq
			errs <- nil
		}()
	}
	var top uint64
	for range jobs {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		top = max(top, <-last)
	}
	acked := time.Since(start)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := n.WaitProjected(wctx, top); err != nil {
		b.Fatal(err)
	}
	projected := time.Since(start)
	b.StopTimer()

	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	var logMsgs, logBytes uint64
	names := []string{events.StreamName}
	if partitions > 1 {
		names = names[:0]
		for i := range partitions {
			names = append(names, fmt.Sprintf("%s_P%d", events.StreamName, i))
		}
	}
	for _, name := range names {
		st, err := js.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		logMsgs, logBytes = logMsgs+info.State.Msgs, logBytes+info.State.Bytes
	}
	fi, err := os.Stat(filepath.Join(n.cfg.DataDir, ProjectionFile))
	if err != nil {
		b.Fatal(err)
	}
	queries := []string{"budget for the migration", "which database did we pick", "deadline next week", "the error in the deploy", "what did the customer ask"}
	var userLat, sessLat []time.Duration
	for i := range 200 {
		q := queries[i%len(queries)]
		id := jobs[i%len(jobs)].id
		scope := memoryv1.SearchScope_SEARCH_SCOPE_SESSION
		if i%2 == 1 {
			scope = memoryv1.SearchScope_SEARCH_SCOPE_USER
		}
		t0 := time.Now()
		if _, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: q, Limit: 20, Scope: scope}); err != nil {
			b.Fatal(err)
		}
		if scope == memoryv1.SearchScope_SEARCH_SCOPE_USER {
			userLat = append(userLat, time.Since(t0))
		} else {
			sessLat = append(sessLat, time.Since(t0))
		}
	}
	pct := func(lat []time.Duration, p float64) float64 {
		slices.Sort(lat)
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
	}
	m := float64(messages)
	b.ReportMetric(m, "messages")
	b.ReportMetric(float64(appends)/acked.Seconds(), "appends/s")
	b.ReportMetric(m/acked.Seconds(), "msgs/s")
	b.ReportMetric(float64((projected - acked).Milliseconds()), "projected-after-ms")
	b.ReportMetric(float64(logMsgs)/m, "events/msg")
	b.ReportMetric(float64(logBytes)/m, "log-B/msg")
	b.ReportMetric(float64(fi.Size())/m, "proj-B/msg")
	b.ReportMetric(pct(sessLat, 0.5), "session-search-p50-µs")
	b.ReportMetric(pct(userLat, 0.5), "user-search-p50-µs")
	b.ReportMetric(pct(userLat, 0.99), "user-search-p99-µs")
}
