package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// benchNodes starts nodes agentmem nodes: on one embedded server (servers
// 1: node 0 embeds it, the others connect to it) or on a three-server
// JetStream cluster (servers 3, R3). It returns a client connection.
func benchNodes(b *testing.B, servers, nodes int) *nats.Conn {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var urls []string
	if servers == 3 {
		_, urls = startCluster(b)
	}
	for i := range nodes {
		cfg := node.DefaultConfig()
		cfg.DataDir, cfg.HTTPAddr, cfg.NodeID = b.TempDir(), "", fmt.Sprintf("n%d", i)
		switch {
		case servers == 3:
			cfg.NATSURL, cfg.Replicas = urls[i%3], 3
		case i == 0:
			cfg.NATSListen = "127.0.0.1:-1"
		default:
			cfg.NATSURL = urls[0]
		}
		var n *node.Node
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
			if n, err = node.Start(context.Background(), cfg, quiet); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = n.Shutdown(context.Background()) })
		if servers == 1 && i == 0 {
			urls = []string{n.ClientURL()}
		}
	}
	time.Sleep(500 * time.Millisecond) // the partitions settle on the last node
	nc, err := nats.Connect(urls[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}

func appendOnce(nc *nats.Conn, id string, i int) (time.Duration, bool, error) {
	body, _ := proto.Marshal(&memoryv1.AppendRequest{CommandId: fmt.Sprintf("%s-%d", id, i),
		Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("note %d of %s", i, id)}}})
	start := time.Now()
	m, err := nc.Request("mem.v1.session."+id+".append", body, 10*time.Second)
	if err == nil && m.Header.Get("Nats-Service-Error-Code") != "" {
		err = fmt.Errorf("append: %s", m.Header.Get("Nats-Service-Error"))
	}
	return time.Since(start), err == nil && m.Header.Get(node.ServedByHeader) != "", err
}

func createSessions(b *testing.B, nc *nats.Conn, n int) []string {
	b.Helper()
	c := client.New(nc)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("b%d", i)
		if _, err := c.CreateSession(context.Background(), ids[i], &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

func pctl(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
}

// BenchmarkCluster: the append round trip (one client, serial) and the
// 64-session rate, on one node and on three nodes in this process, with
// one NATS server (placement and forwarding alone) and with a three-server
// JetStream cluster at R3 (the production shape). Requests reach a random
// node (the micro queue group); one not served there is forwarded to its
// owner: forwarded-p50 is those, local-p50 the others. raw-js-publish is a
// plain JetStream publish on the same kind of server. Every node, server
// and client shares this machine's cores.
func BenchmarkCluster(b *testing.B) {
	for _, shape := range []struct {
		name           string
		servers, nodes int
	}{{"1server-1node", 1, 1}, {"1server-3nodes", 1, 3}, {"3servers-R3-1node", 3, 1}, {"3servers-R3-3nodes", 3, 3}} {
		b.Run(shape.name+"/1client", func(b *testing.B) {
			nc := benchNodes(b, shape.servers, shape.nodes)
			ids := createSessions(b, nc, 16)
			var local, fwd []time.Duration
			b.ResetTimer()
			for i := range b.N {
				d, forwarded, err := appendOnce(nc, ids[i%len(ids)], i)
				if err != nil {
					b.Fatal(err)
				}
				if forwarded {
					fwd = append(fwd, d)
				} else {
					local = append(local, d)
				}
			}
			b.StopTimer()
			all := append(slices.Clone(local), fwd...)
			b.ReportMetric(pctl(all, 0.5), "p50-µs")
			b.ReportMetric(pctl(all, 0.99), "p99-µs")
			b.ReportMetric(pctl(local, 0.5), "local-p50-µs")
			b.ReportMetric(pctl(fwd, 0.5), "forwarded-p50-µs")
			b.ReportMetric(float64(len(fwd))/float64(max(1, len(all))), "forwarded-share")
		})
		b.Run(shape.name+"/64sessions", func(b *testing.B) {
			nc := benchNodes(b, shape.servers, shape.nodes)
			ids := createSessions(b, nc, 64)
			var next atomic.Int64
			var failed atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if _, _, err := appendOnce(nc, id, int(i)); err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if failed.Load() > 0 {
				b.Fatalf("%d appends failed", failed.Load())
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
		})
	}
	b.Run("raw-js-publish-1", func(b *testing.B) {
		nc := benchNodes(b, 1, 1)
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}}); err != nil {
			b.Fatal(err)
		}
		payload := make([]byte, 200)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, err := js.Publish(context.Background(), "raw.x", payload); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		b.ReportMetric(pctl(lat, 0.5), "p50-µs")
		b.ReportMetric(pctl(lat, 0.99), "p99-µs")
	})
}

// BenchmarkFailover: a node serving a session dies (its connection closes
// at once, nothing handed over); the time from the kill to the first
// append acknowledged on that session by the surviving node, p50/p99 over
// b.N trials (run with -benchtime=20x). Default lease (5 s).
func BenchmarkFailover(b *testing.B) {
	survivor, nc := node.StartForTest(b, func(c *node.Config) { c.NodeID = "survivor" })
	c := client.New(nc)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var took []time.Duration
	b.ResetTimer()
	for trial := range b.N {
		b.StopTimer()
		cfg := node.DefaultConfig()
		cfg.DataDir, cfg.HTTPAddr, cfg.NATSURL, cfg.NodeID = b.TempDir(), "", survivor.ClientURL(), fmt.Sprintf("victim%d", trial)
		victim, err := node.Start(context.Background(), cfg, quiet)
		if err != nil {
			b.Fatal(err)
		}
		var id string
		for deadline, i := time.Now().Add(10*time.Second), 0; id == ""; i++ {
			if s := fmt.Sprintf("f%d-%d", trial, i%200); victim.Serves(s) {
				id = s
			}
			if time.Now().After(deadline) {
				b.Fatal("the victim serves nothing")
			}
			if i%200 == 199 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if _, err := c.CreateSession(context.Background(), id, &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.AppendMessages(context.Background(), id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "before"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		killed := time.Now()
		victim.Kill()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := c.WithTimeout(30*time.Second).AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "after"})
			cancel()
			if err == nil {
				break
			}
			if time.Since(killed) > time.Minute {
				b.Fatalf("not served a minute after the kill: %v", err)
			}
		}
		took = append(took, time.Since(killed))
	}
	b.StopTimer()
	ms := make([]time.Duration, len(took))
	copy(ms, took)
	b.ReportMetric(pctl(ms, 0.5)/1000, "p50-ms")
	b.ReportMetric(pctl(ms, 0.99)/1000, "p99-ms")
}
