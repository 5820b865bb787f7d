package node_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/inspector"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The soak run (make soak): off unless -soak is set.
var (
	soakFor     = flag.Duration("soak", 0, "run TestSoak for this long (0: skip); make soak sets 30m")
	soakEvery   = flag.Duration("soak.sample", 10*time.Second, "TestSoak: how often it samples the node")
	soakErase   = flag.Duration("soak.erase", time.Minute, "TestSoak: how often it erases a session (every fifth: its user)")
	soakWorkers = flag.Int("soak.workers", 3, "TestSoak: concurrent clients")
	soakPause   = flag.Duration("soak.pause", 20*time.Millisecond, "TestSoak: each client's pause between two operations")
	soakGrowth  = flag.Float64("soak.heapgrowth", 1.25, "TestSoak: fail if the quiet live heap later exceeds this times that after the warm-up, plus -soak.heapslack")
	soakSlack   = flag.Int("soak.heapslack", 8, "TestSoak: MB the quiet live heap later may exceed -soak.heapgrowth times the warm-up's: the stream's last block, cached whole (up to 8 MB) or not at all")
	soakHeap    = flag.String("soak.heapprofile", "", "TestSoak: write heap profiles to this path + .ref (at the first minute, clients running), .warm-up, .middle, .last and .end (quiet; compare: go tool pprof -top -base X.warm-up X.end)")
)

// soakOps are the operations a soak client draws from, with their weights.
var soakOps = []struct {
	name   string
	weight int
}{
	{"append", 40}, {"search", 12}, {"context", 10}, {"watch", 12}, {"sse", 6}, {"timeline page", 5}, {"context page", 10}, {"recall", 5},
}

// soakState is what the clients share: the sessions they may use.
type soakState struct {
	mu      sync.Mutex
	live    []string        // sessions in use, oldest first
	erased  map[string]bool // sessions erased or being erased: a 404 is expected
	created int

	// gate: each operation holds it shared; the heap is measured holding
	// it, so with no operation in flight (quietHeap).
	gate sync.RWMutex

	ops, notFound, errs atomic.Int64
	errMu               sync.Mutex
	errSamples          map[string]int // "op: error" → count (first 60 characters)
}

func (s *soakState) pick(r *rand.Rand) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.live) == 0 {
		return "", false
	}
	return s.live[r.IntN(len(s.live))], true
}

// result counts one operation's outcome: a 404 of an erased session is
// documented behaviour, anything else failed is an error.
func (s *soakState) result(op, id string, code int, err error) {
	s.ops.Add(1)
	if err == nil && (code == 0 || code == 200) {
		return
	}
	s.mu.Lock()
	gone := s.erased[id]
	s.mu.Unlock()
	if code == 404 && gone {
		s.notFound.Add(1)
		return
	}
	s.errs.Add(1)
	what := fmt.Sprintf("%s: %d", op, code)
	if err != nil {
		what += " " + err.Error()
	}
	if len(what) > 120 {
		what = what[:120]
	}
	s.errMu.Lock()
	s.errSamples[what]++
	s.errMu.Unlock()
}

// newSession creates the next session, each of its own user.
func (s *soakState) newSession(ctx context.Context, c *client.Client) error {
	s.mu.Lock()
	s.created++
	id := fmt.Sprintf("soak%d", s.created)
	s.mu.Unlock()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u-" + id, Project: "soak"}); err != nil {
		return err
	}
	s.mu.Lock()
	s.live = append(s.live, id)
	s.mu.Unlock()
	return nil
}

// soakSample is one row of the table.
type soakSample struct {
	at                   time.Duration
	ops, notFound, errs  int64
	health               int
	consumers            int
	goroutines           int
	actors               int // live session and scope actors
	heapLive             uint64
	streamMsgs, streamMB uint64
	erases               int
}

// TestSoak runs a default node under a steady mixed load for -soak (make
// soak: 30 minutes): appends, searches, context and recall reads, watch
// polls and Server-Sent Events streams, inspector timeline and context
// page loads, from -soak.workers clients, and an erase every -soak.erase
// (a session, every fifth time its user). Every -soak.sample it samples
// /healthz, the log stream's consumers, the process's goroutines, live
// actors and live heap as of the last collection (the node and the
// clients share the process), and prints a table, then the quiet live
// heap (quietHeap) after the warm-up, in the middle, at the last sample
// and at the end.
// It fails if /healthz ever answers other than 200, an operation fails
// other than with the 404 of something erased, the consumers or the
// goroutines at the end exceed those after the first minute, or the quiet
// live heap later exceeds -soak.heapgrowth (1.25) times that after the
// warm-up plus -soak.heapslack (8 MB). What the node keeps is bounded,
// not constant: the stream's last block is cached whole (up to 8 MB) or
// not at all, erased sessions' actors stay until their idle timeout.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak run: make soak, or go test -run TestSoak ./node/ -soak=5m")
	}
	if *soakHeap != "" {
		// One sample per 16 KiB allocated rather than 512 KiB: what grows by
		// a few MB over the run shows by its owner, not as noise.
		goruntime.MemProfileRate = 16 << 10
	}
	h := startHealthNode(t, nil)
	base := "http://" + h.n.MetricsAddr()
	ctx, cancel := context.WithTimeout(context.Background(), *soakFor)
	defer cancel()
	st := &soakState{erased: make(map[string]bool), errSamples: make(map[string]int)}
	for range 8 {
		if err := st.newSession(ctx, h.c); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range *soakWorkers {
		wg.Go(func() { soakClient(ctx, h, base, st, uint64(w)) })
	}
	var erases atomic.Int64
	wg.Go(func() {
		tick := time.NewTicker(*soakErase)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			st.mu.Lock()
			id := st.live[0]
			st.live = st.live[1:]
			st.erased[id] = true
			st.mu.Unlock()
			n := erases.Add(1)
			var err error
			st.gate.RLock()
			if n%5 == 0 {
				_, err = h.c.EraseUser(ctx, "u-"+id, "soak: a user erase")
			} else {
				_, err = h.c.EraseSession(ctx, id, "soak: a session erase")
			}
			st.gate.RUnlock()
			if ctx.Err() != nil {
				return // cut by the end of the run
			}
			st.result("erase", id, client.Code(err), err)
			if err := st.newSession(ctx, h.c); err != nil && ctx.Err() == nil {
				st.result("create", "", client.Code(err), err)
			}
		}
	})

	var rows []soakSample
	sample := func() soakSample {
		s := soakSample{at: time.Since(start).Round(time.Second), ops: st.ops.Load(), notFound: st.notFound.Load(), errs: st.errs.Load(), erases: int(erases.Load())}
		s.health, _ = healthzCode(base)
		s.consumers = h.streamConsumers(t)
		s.goroutines = goruntime.NumGoroutine()
		s.actors = h.n.DirectoryForTest().Active()
		m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(m)
		s.heapLive = m[0].Value.Uint64()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		if str, err := h.js.Stream(sctx, events.StreamName); err == nil {
			s.streamMsgs, s.streamMB = str.CachedInfo().State.Msgs, str.CachedInfo().State.Bytes>>20
		}
		scancel()
		return s
	}
	rows = append(rows, sample())
	// The reference for the end: the first sample after a minute (or half
	// the run), when the node has started what it keeps.
	var ref soakSample
	var refStacks map[string]int
	heap := newQuietHeap(*soakFor, *soakErase, *soakEvery)
	tick := time.NewTicker(*soakEvery)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			rows = append(rows, sample())
			r := rows[len(rows)-1]
			if refStacks == nil && (r.at >= time.Minute || r.at >= *soakFor/2) {
				ref, refStacks = r, goroutineStacks()
				writeHeapProfile(t, ".ref")
			}
			heap.maybeMeasure(t, r.at, &st.gate)
			fmt.Fprintf(os.Stdout, "soak %s: %d ops, %d errors, /healthz %d, %d consumers, %d goroutines, %d actors, heap %d MB\n",
				r.at, r.ops, r.errs, r.health, r.consumers, r.goroutines, r.actors, r.heapLive>>20)
		}
	}
	tick.Stop()
	wg.Wait()
	if refStacks == nil {
		ref, refStacks = rows[len(rows)-1], goroutineStacks()
	}
	// Everything the clients started ends: the node's own is left (a
	// watch poll of a client that left ends with it; a page the client
	// left is still rendered). Wait for as few goroutines as before the
	// clients started, up to 30 s, before measuring what stays.
	settledGoroutines(rows[0].goroutines, 30*time.Second)
	// An inspector page's reads end within its read timeout (10 s by
	// default), and a page whose client left is not built further; its
	// memory then goes.
	time.Sleep(inspector.DefaultConfig().ReadTimeout)
	final := sample()
	heap.measure(t, "end", final.at, nil)
	rows = append(rows, final)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "elapsed\tops\tops/s\terrors\t404 erased\terases\t/healthz\tconsumers\tgoroutines\tactors\theap live MB\tstream msgs\tstream MB\t")
	for i, r := range rows {
		rate := 0.0
		if i > 0 && r.at > rows[i-1].at {
			rate = float64(r.ops-rows[i-1].ops) / (r.at - rows[i-1].at).Seconds()
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t\n", r.at, r.ops, rate, r.errs, r.notFound, r.erases, r.health, r.consumers, r.goroutines, r.actors, mb(r.heapLive), r.streamMsgs, r.streamMB)
	}
	tw.Flush()
	heap.report(os.Stdout, *soakGrowth, *soakSlack)
	if len(st.errSamples) > 0 {
		fmt.Fprintln(os.Stdout, "errors:")
		for _, k := range slices.Sorted(maps.Keys(st.errSamples)) {
			fmt.Fprintf(os.Stdout, "  %5d  %s\n", st.errSamples[k], k)
		}
	}

	for _, r := range rows {
		if r.health != 200 {
			t.Errorf("/healthz answered %d at %s", r.health, r.at)
		}
	}
	if n := st.errs.Load(); n > 0 {
		t.Errorf("%d operations failed other than with the 404 of something erased", n)
	}
	if err := heap.check(*soakGrowth, *soakSlack); err != nil {
		t.Error(err)
	}
	if final.consumers > ref.consumers {
		t.Errorf("%d consumers on the stream at the end, %d at %s", final.consumers, ref.consumers, ref.at)
	}
	if final.goroutines > ref.goroutines {
		t.Errorf("%d goroutines at the end (the clients stopped), %d at %s (clients running); the stacks that grew:\n%s",
			final.goroutines, ref.goroutines, ref.at, stacksGrown(refStacks, goroutineStacks()))
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// heapAfterGC collects garbage twice (what sync.Pools hold survives one
// collection) and returns the live heap.
func heapAfterGC() uint64 {
	goruntime.GC()
	goruntime.GC()
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// writeHeapProfile writes the heap profile, after two collections (the
// profile lags one behind), to -soak.heapprofile + suffix (nothing
// without the flag).
func writeHeapProfile(t *testing.T, suffix string) {
	if *soakHeap == "" {
		return
	}
	goruntime.GC()
	goruntime.GC()
	f, err := os.Create(*soakHeap + suffix)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Error(err)
	}
}

// goroutineStacks counts the process's goroutines by stack (function names
// only, innermost first, at most 8 frames).
func goroutineStacks() map[string]int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	out := make(map[string]int)
	for _, block := range strings.Split(b.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		var n int
		if len(lines) < 2 {
			continue
		}
		if _, err := fmt.Sscanf(lines[0], "%d @", &n); err != nil {
			continue
		}
		var fns []string
		for _, l := range lines[1:] {
			f := strings.Split(l, "\t") // "#", address, "pkg.fn+0x12", "file:line"
			if len(f) >= 3 && len(fns) < 8 {
				name, _, _ := strings.Cut(f[2], "+")
				fns = append(fns, name)
			}
		}
		out[strings.Join(fns, " < ")] += n
	}
	return out
}

// stacksGrown lists the stacks more goroutines are in after than before.
func stacksGrown(before, after map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d > 0 {
			fmt.Fprintf(&b, "  +%d (%d -> %d) %s\n", d, before[k], after[k], k)
		}
	}
	return b.String()
}

// soakClient runs operations drawn from soakOps until ctx ends.
func soakClient(ctx context.Context, h *healthNode, base string, st *soakState, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	total := 0
	for _, o := range soakOps {
		total += o.weight
	}
	turn := 0
	for ctx.Err() == nil {
		id, ok := st.pick(r)
		if !ok {
			time.Sleep(*soakPause)
			continue
		}
		n := r.IntN(total)
		op := soakOps[0].name
		for _, o := range soakOps {
			if n < o.weight {
				op = o.name
				break
			}
			n -= o.weight
		}
		st.gate.RLock()
		code, err := soakOp(ctx, h, base, op, id, r, turn)
		st.gate.RUnlock()
		turn++
		if ctx.Err() != nil {
			return // cut by the end of the run: not counted
		}
		st.result(op, id, code, err)
		select {
		case <-ctx.Done():
		case <-time.After(*soakPause):
		}
	}
}

var soakWords = strings.Fields("the quarterly report mentions otters budget travel kayak deadline invoice garden recipe chess pianist volcano")

// soakOp runs one operation on session id and returns its code (0 or 200:
// fine) and error.
func soakOp(ctx context.Context, h *healthNode, base, op, id string, r *rand.Rand, turn int) (int, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	word := soakWords[r.IntN(len(soakWords))]
	switch op {
	case "append":
		_, err := h.c.AppendMessages(octx, id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("turn %d: tell me about %s and %s", turn, word, soakWords[r.IntN(len(soakWords))])},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "here is what I know about " + word})
		return client.Code(err), err
	case "search":
		_, err := h.c.Search(octx, id, &memoryv1.SearchRequest{Query: word})
		return client.Code(err), err
	case "recall":
		_, err := h.c.Recall(octx, id, &memoryv1.RecallRequest{Limit: 10})
		return client.Code(err), err
	case "context":
		// Without the client's cache: the soak measures what the node
		// keeps, not what its client does.
		_, err := h.c.WithoutContextCache().Context(octx, id)
		return client.Code(err), err
	case "watch":
		b, err := h.l.Bounds(octx)
		if err != nil {
			return 0, err
		}
		from := uint64(r.Int64N(int64(b.Last) + 1))
		return httpCode(octx, http.MethodPost, fmt.Sprintf("%s/v1/session/%s/watch", base, id), fmt.Sprintf(`{"from_seq": %d, "max_changes": 16}`, from))
	case "sse":
		return sseCode(octx, fmt.Sprintf("%s/v1/session/%s/watch?from_seq=0&max_changes=4", base, id))
	case "timeline page":
		return httpCode(octx, http.MethodGet, fmt.Sprintf("%s/ui/s/%s/timeline", base, id), "")
	case "context page":
		return httpCode(octx, http.MethodGet, fmt.Sprintf("%s/ui/s/%s", base, id), "")
	}
	return 0, fmt.Errorf("unknown operation %q", op)
}

// httpCode sends one request and returns its status (the body read and
// dropped).
func httpCode(ctx context.Context, method, url, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d", method, url[strings.Index(url, "/v1")+1:], resp.StatusCode)
	}
	return resp.StatusCode, err
}

// sseCode opens a Server-Sent Events watch, reads its first change and
// leaves.
func sseCode(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode, fmt.Errorf("SSE watch: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch sc.Text() {
		case "event: change":
			return 200, nil
		case "event: error":
			sc.Scan()
			if strings.Contains(sc.Text(), `"code":404`) {
				return 404, errors.New(sc.Text())
			}
			return 500, errors.New(sc.Text())
		}
	}
	return 0, fmt.Errorf("SSE watch ended without a change: %v", sc.Err())
}

// healthzCode is /healthz's status.
func healthzCode(base string) (int, error) {
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
