package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkErase: erase latency (request to receipt: every read path
// clean, the projection applied) for a session of 1,000 messages and for
// a user with 100 sessions of 10 messages, beside a plain JetStream purge
// of the same number of messages on the same stream (the engine figure).
// Embedded server, file storage, sync default. Samples are fixed (8
// sessions, 3 users), not b.N: run with -benchtime=1x.
//
//	go test -run '^$' -bench Erase -benchtime=1x ./node/
func BenchmarkErase(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc).WithTimeout(2 * time.Minute)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fill := func(id, user string, msgs int) {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < msgs; i += 10 {
			in := make([]*memoryv1.MessageInput, 0, 10)
			for j := range 10 {
				in = append(in, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("message %d of %s about the harbour and the weather", i+j, id)})
			}
			if _, err := c.AppendMessages(ctx, id, in...); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The engine figure: purging a subject of n messages (each the size
	// of an append of 10 messages) from the same stream.
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	purge := func(subject string, n int) time.Duration {
		payload := make([]byte, 1200)
		for range n {
			if _, err := js.Publish(ctx, subject, payload); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range b.N {
		var sessionLat, purgeLat []time.Duration
		for i := range 8 {
			id := fmt.Sprintf("big-%d", i)
			fill(id, fmt.Sprintf("bu%d", i), 1000)
			start := time.Now()
			if _, err := c.EraseSession(ctx, id, "bench"); err != nil {
				b.Fatal(err)
			}
			sessionLat = append(sessionLat, time.Since(start))
			purgeLat = append(purgeLat, purge(events.ScopeSubject("benchraw", id), 100))
		}
		var userLat, userPurge []time.Duration
		for u := range 3 {
			user := fmt.Sprintf("many-%d", u)
			for s := range 100 {
				fill(fmt.Sprintf("%s-s%d", user, s), user, 10)
			}
			start := time.Now()
			rc, err := c.EraseUser(ctx, user, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if len(rc.GetSessions()) != 100 {
				b.Fatalf("user erase covered %d sessions", len(rc.GetSessions()))
			}
			userLat = append(userLat, time.Since(start))
			var d time.Duration
			for s := range 100 {
				d += purge(events.ScopeSubject("benchraw", fmt.Sprintf("%s-s%d", user, s)), 2)
			}
			userPurge = append(userPurge, d)
		}
		report := func(lat []time.Duration, name string) {
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, name+"-p50-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, name+"-max-ms")
		}
		report(sessionLat, "session1000")
		report(purgeLat, "jspurge100")
		report(userLat, "user100")
		report(userPurge, "jspurge100subjects")
	}
}
