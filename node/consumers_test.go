package node_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// streamConsumers is the number of consumers the server holds on the log
// stream.
func (h *healthNode) streamConsumers(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := h.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// settledGoroutines waits up to within for the process's goroutines to be
// at most want, and returns their number.
func settledGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		n := goruntime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sseFirstChange opens the session's watch as Server-Sent Events from
// sequence from, reads up to its first change and leaves (the client goes
// away while the stream's next poll waits).
func sseFirstChange(base, id string, from uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/session/%s/watch?from_seq=%d&max_changes=4", base, id, from), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("SSE watch: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: change" {
			return nil
		}
	}
	return fmt.Errorf("SSE watch ended without a change: %v", sc.Err())
}

// TestReadsReleaseConsumers: every JetStream consumer a request makes the
// node create is gone when the request ends, as are its goroutines. 1,000
// watch reads (long polls over NATS and HTTP that answer at once, polls
// that wait and are woken by an append, Server-Sent Events streams the
// client leaves after the first change) and 100 loads of the inspector's
// timeline of a 300-turn session leave the stream with the consumers it
// had before (the node's own long-lived ones), and the process with the
// goroutines it had.
func TestReadsReleaseConsumers(t *testing.T) {
	h := startHealthNode(t, nil)
	base := "http://" + h.n.MetricsAddr()
	ctx := context.Background()
	if _, err := h.c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := h.c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up: the first requests start what lives as long as the node.
	if err := sseFirstChange(base, "s1", 0); err != nil {
		t.Fatal(err)
	}
	if code, _ := getPage(t, base+"/ui/s/s1/timeline"); code != 200 {
		t.Fatalf("timeline: %d", code)
	}
	beforeGoroutines := settledGoroutines(0, time.Second) // what runs settles
	before := h.streamConsumers(t)
	b, err := h.l.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := b.Last

	reads := 0
	// 400 polls over NATS that answer at once, from every part of the log.
	for i := range 400 {
		rep, err := watchPoll(ctx, h.nc, "s1", &memoryv1.WatchRequest{FromSeq: uint64(i) % last, MaxChanges: 16})
		if err != nil {
			t.Fatalf("watch poll %d: %v", i, err)
		}
		if len(rep.GetChanges()) == 0 {
			t.Fatalf("watch poll %d from %d: no change", i, uint64(i)%last)
		}
		reads++
	}
	// 300 over HTTP.
	for i := range 300 {
		code, out := post(t, base, "/v1/session/s1/watch", fmt.Sprintf(`{"from_seq": %d, "max_changes": 8}`, uint64(i)%last))
		if code != 200 {
			t.Fatalf("HTTP watch poll %d: %d %v", i, code, out)
		}
		reads++
	}
	// 100 that wait for the next change, woken by an append, 10 at a time.
	for round := range 10 {
		b, err := h.l.Bounds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for range 10 {
			wg.Go(func() {
				rep, err := watchPoll(ctx, h.nc, "s1", &memoryv1.WatchRequest{FromSeq: b.Last, MaxChanges: 16, WaitMs: 10000})
				if err != nil {
					errs <- err
					return
				}
				if len(rep.GetChanges()) == 0 {
					errs <- fmt.Errorf("a waiting poll from %d woke without a change", b.Last)
				}
			})
		}
		time.Sleep(50 * time.Millisecond) // the polls are waiting (a late one reads the append at once)
		if _, err := h.c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("wake %d", round)}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		reads += 10
	}
	// 200 Server-Sent Events streams the client leaves after the first
	// change: half from the middle of the session (the stream's next poll
	// answers at once), half from its last change (the next poll waits for
	// the next change, up to 25 s, for a client that is gone).
	b, err = h.l.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		from := uint64(i) % last
		if i%2 == 1 {
			from = b.Last - 1
		}
		if err := sseFirstChange(base, "s1", from); err != nil {
			t.Fatalf("SSE stream %d from %d: %v", i, from, err)
		}
		reads++
	}
	// 100 timeline loads (each a few watch pages and a replay of the
	// session).
	for i := range 100 {
		if code, body := getPage(t, base+"/ui/s/s1/timeline"); code != 200 {
			t.Fatalf("timeline load %d: %d %.300s", i, code, body)
		}
	}
	after := h.streamConsumers(t)
	afterGoroutines := settledGoroutines(beforeGoroutines+5, 5*time.Second)
	t.Logf("%d watch reads and 100 timeline loads: %d consumers on the stream before, %d after; %d goroutines before, %d after",
		reads, before, after, beforeGoroutines, afterGoroutines)
	if after != before {
		t.Errorf("the stream holds %d consumers after the requests, %d before: requests left consumers behind", after, before)
	}
	if afterGoroutines > beforeGoroutines+5 {
		t.Errorf("%d goroutines 5 s after the requests ended, %d before", afterGoroutines, beforeGoroutines)
	}
	// The public watch still answers.
	if code, out := post(t, base, "/v1/session/s1/watch", `{"from_seq": 0, "max_changes": 1}`); code != 200 {
		t.Fatalf("watch after the requests: %d %v", code, out)
	}
}

// watchPoll sends one watch poll of session id over NATS, as the client
// does.
func watchPoll(ctx context.Context, nc *nats.Conn, id string, req *memoryv1.WatchRequest) (*memoryv1.WatchReply, error) {
	data, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.GetWaitMs())*time.Millisecond+10*time.Second)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, client.FollowSession(id), data)
	if err != nil {
		return nil, err
	}
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
		return nil, fmt.Errorf("watch %s: error %s: %s", id, code, m.Header.Get("Nats-Service-Error"))
	}
	rep := &memoryv1.WatchReply{}
	return rep, proto.Unmarshal(m.Data, rep)
}

// getPage fetches url and returns the status and the body.
func getPage(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}
