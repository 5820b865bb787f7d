package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestCrashConsolidation runs the node binary, terminates sessions whose
// users state facts and corrections (each termination starts a
// consolidation in the background), kill -9s the node while those run and
// restarts it. After the restart sweep every session is consolidated, and
// exactly once: each fact key's history holds each of its values once, in
// the order stated (no duplicate version from a re-run).
func TestCrashConsolidation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the node binary")
	}
	bin := buildNode(t)
	dataDir := t.TempDir()
	addr := freePort(t)
	proc := startNode(t, bin, dataDir, addr)
	nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(nc)
	ctx := context.Background()
	const sessions = 12
	cities := []string{"Lisbon", "Porto", "Braga", "Faro"}
	products := []string{"atlas", "boreal", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen"}
	for i := range sessions {
		id, user := fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i%3)
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: "helper"}); err != nil {
			t.Fatal(err)
		}
		turns := []string{
			fmt.Sprintf("I'm allergic to peanuts and my daughter's name is Ana%d.", i),
			fmt.Sprintf("We decided to ship the %s release on Friday.", products[i]),
			"Actually, make it Monday.",
			fmt.Sprintf("I moved to %s last month.", cities[i%len(cities)]),
		}
		for _, text := range turns {
			if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text},
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Noted."}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range sessions {
		if _, err := c.SetStatus(ctx, fmt.Sprintf("s%d", i), memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
			t.Fatal(err)
		}
	}
	// The consolidations run in the background now: kill the node while
	// they do (some done, some part-way, some not begun).
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	nc.Close()

	restarted := time.Now()
	startNode(t, bin, dataDir, addr)
	nc2, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	c2 := client.New(nc2)
	deadline := time.Now().Add(60 * time.Second)
	before := 0 // sessions consolidated before the kill
	for i := range sessions {
		for {
			m, err := c2.GetEntry(ctx, client.User(fmt.Sprintf("u%d", i%3)), fmt.Sprintf("consolidated/s%d", i), 0)
			if err == nil {
				if m.GetCreatedUnixNano() < restarted.UnixNano() {
					before++
				}
				break
			}
			if client.Code(err) != 404 || time.Now().After(deadline) {
				t.Fatalf("session s%d never consolidated after the restart: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("%d of %d sessions were consolidated before the kill, the rest by the restart sweep", before, sessions)
	decisions := 0
	for u := range 3 {
		user := client.User(fmt.Sprintf("u%d", u))
		// Each user had 4 sessions: the allergy is one value (restated:
		// merged), the city moves between values, each release decision
		// is Friday then Monday.
		l, err := c2.ListEntries(ctx, user, &memoryv1.ListEntriesRequest{Prefix: "fact/", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l.GetEntries() {
			h, err := c2.History(ctx, user, e.GetKey())
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			var vals []string
			for _, v := range h {
				fv := v.GetMetadata()["fact_value"]
				vals = append(vals, fv)
				seen[v.GetMetadata()["consolidation_command"]]++
			}
			for cmd, n := range seen {
				if n > 1 {
					t.Errorf("%s %s: command %s written %d times: %q", user.ID, e.GetKey(), cmd, n, vals)
				}
			}
			if p, ok := strings.CutPrefix(e.GetKey(), "fact/we/decision/ship_"); ok {
				if want := "ship the " + p + " release on Friday,ship the " + p + " release on Monday"; strings.Join(vals, ",") != want {
					t.Errorf("%s %s: versions %q, want Friday then Monday once each", user.ID, e.GetKey(), vals)
				}
				decisions++
			}
			if e.GetKey() == "fact/user/allergy/peanuts" && len(h) != 1 {
				t.Errorf("%s allergy: %d versions %q, want 1 (restated values merge)", user.ID, len(h), vals)
			}
		}
	}
	if decisions != sessions {
		t.Errorf("%d decision keys, want %d (one per session)", decisions, sessions)
	}
}
