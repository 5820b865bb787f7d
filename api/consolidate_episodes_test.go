package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// routerTries are four sessions' episodes of one task, in four wordings
// (four keys), the third one worked.
var routerTries = []struct{ session, user, text string }{
	{"s1", "u1", "I tried restarting the router, but it didn't help."},
	{"s2", "u2", "I already tried restarting my router, but it didn't help."},
	{"s3", "u1", "I tried restarting the router twice and it worked."},
	{"s4", "u2", "I tried restarting the router box again, but it failed."},
}

const summaryKey = "episode/summary/restarting_the_router"

// episodesInAgent returns agent:helper's live episodes by key.
func episodesInAgent(t *testing.T, c *client.Client) map[string]*memoryv1.Entry {
	t.Helper()
	r, err := c.ListEntries(context.Background(), client.Agent("helper"), &memoryv1.ListEntriesRequest{Prefix: "episode/"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*memoryv1.Entry{}
	for _, e := range r.GetEntries() {
		if !e.GetDeleted() {
			out[e.GetKey()] = e
		}
	}
	return out
}

// TestEpisodeSummary: with SummaryAfter 3, the fourth similar episode in
// the agent's scope is summarized with the three older ones (outcomes
// counted, the latest in the user's words, each source session and user
// named); the sources are marked consolidated_into the summary, the
// memory section of a new session shows the summary alone; a re-run writes
// nothing; erasing one source session erases the summary, and the next
// consolidation shows the remaining episodes again.
func TestEpisodeSummary(t *testing.T) {
	_, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.Consolidation.SummaryAfter = 3 })
	c := client.New(nc)
	ctx := context.Background()
	for i, tr := range routerTries {
		converse(t, c, tr.session, tr.user, tr.text, "I see.")
		rep, err := c.Consolidate(ctx, tr.session, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetScope() != "agent:helper" || rep.GetFacts()[0].GetOutcome() != "written" {
			t.Fatalf("%s: facts %v", tr.session, rep.GetFacts())
		}
		want := ""
		if i == 3 {
			want = summaryKey
		}
		if got := rep.GetFacts()[0].GetSummarizedInto(); got != want {
			for k, e := range episodesInAgent(t, c) {
				t.Logf("%s %v", k, e.GetMetadata())
			}
			t.Fatalf("%s: summarized into %q, want %q", tr.session, got, want)
		}
	}
	eps := episodesInAgent(t, c)
	sum := eps[summaryKey]
	if sum == nil || len(eps) != 5 {
		t.Fatalf("episodes %v, want 4 and the summary", keysOf(eps))
	}
	text := string(sum.GetValue())
	if !strings.HasPrefix(text, "Tried restarting the router 4 times: worked 1, did not work 3. Latest (session s4): I tried restarting the router box again, but it failed.") {
		t.Fatalf("summary %q", text)
	}
	md := sum.GetMetadata()
	for _, k := range []string{"agentmem.summary_session.s1", "agentmem.summary_session.s2", "agentmem.summary_session.s3", "agentmem.summary_session.s4",
		"agentmem.summary_user.u1", "agentmem.summary_user.u2"} {
		if md[k] == "" {
			t.Errorf("summary metadata lacks %s: %v", k, md)
		}
	}
	if md["episodes"] != "4" || md["worked"] != "1" || md["agentmem.source_session"] != "s4" || sum.GetMemoryType() != memoryv1.MemoryType_MEMORY_TYPE_EPISODIC {
		t.Fatalf("summary metadata %v type %v", md, sum.GetMemoryType())
	}
	for k, e := range eps {
		if k != summaryKey && e.GetMetadata()["consolidated_into"] != summaryKey {
			t.Errorf("%s not marked: %v", k, e.GetMetadata())
		}
	}
	// A re-run of every session writes nothing.
	before := versionsOf(eps)
	for _, tr := range routerTries {
		if _, err := c.Consolidate(ctx, tr.session, false); err != nil {
			t.Fatal(err)
		}
	}
	if after := versionsOf(episodesInAgent(t, c)); after != before {
		t.Fatalf("a re-run changed the episodes: %s, was %s", after, before)
	}
	// A new session's memory section shows the summary, not the copies.
	if _, err := c.CreateSession(ctx, "s5", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "helper", SystemPrompt: "You help."}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // the projection applies the scope's writes asynchronously: ask again until it did
		if _, err := c.AppendMessages(ctx, "s5", user("Did restarting the router help last time?")); err != nil {
			t.Fatal(err)
		}
		cx, err := c.Context(ctx, "s5")
		if err != nil {
			t.Fatal(err)
		}
		var mem strings.Builder
		for _, m := range cx.GetMessages() {
			if m.GetLayer() == "memory" {
				mem.WriteString(m.GetContent())
			}
		}
		got := mem.String()
		if strings.Contains(got, "4 times") {
			if n := strings.Count(got, "I tried restarting") + strings.Count(got, "I already tried"); n != 1 {
				t.Fatalf("memory section shows %d episode texts, want only the summary's latest:\n%s", n, got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the memory section never showed the summary:\n%s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Erasing s1 reaches the summary built from its episode.
	rc, err := c.EraseSession(ctx, "s1", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rc.GetEntries(), " "), "agent:helper:"+summaryKey) {
		t.Fatalf("erase receipt entries %v lack the summary", rc.GetEntries())
	}
	if _, err := c.GetEntry(ctx, client.Agent("helper"), summaryKey, 0); client.Code(err) != 404 {
		t.Fatalf("the summary after erasing s1: %v", err)
	}
	if _, err := c.Consolidate(ctx, "s4", false); err != nil {
		t.Fatal(err)
	}
	eps = episodesInAgent(t, c)
	if len(eps) != 3 {
		t.Fatalf("after the erase: %v, want the 3 episodes of s2..s4", keysOf(eps))
	}
	for k, e := range eps {
		if e.GetMetadata()["consolidated_into"] != "" || strings.Contains(string(e.GetValue()), "didn't help.") && e.GetMetadata()["agentmem.source_session"] == "s1" {
			t.Errorf("%s after the erase: %v", k, e.GetMetadata())
		}
	}
}

func keysOf(m map[string]*memoryv1.Entry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func versionsOf(m map[string]*memoryv1.Entry) string {
	var b strings.Builder
	for _, k := range keysOf(m) {
		fmt.Fprintf(&b, "%s@%d ", k, m[k].GetVersion())
	}
	return b.String()
}

// TestEpisodeSummaryAfterCrash: the node died after writing a summary and
// before marking its sources; on restart the next consolidation marks
// each source once, and writes no second summary.
func TestEpisodeSummaryAfterCrash(t *testing.T) {
	dir := t.TempDir()
	n1, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir, cfg.Consolidation.SummaryAfter = dir, -1 })
	c := client.New(nc)
	ctx := context.Background()
	for _, tr := range routerTries {
		converse(t, c, tr.session, tr.user, tr.text, "I see.")
		if _, err := c.Consolidate(ctx, tr.session, false); err != nil {
			t.Fatal(err)
		}
	}
	// The summary as s4's consolidation writes it, then the crash.
	var inputs []consolidate.Episode
	for _, k := range keysOf(episodesInAgent(t, c)) {
		inputs = append(inputs, api.EpisodeOf(episodesInAgent(t, c)[k]))
	}
	if len(inputs) != 4 {
		t.Fatalf("episodes %v", inputs)
	}
	sum, md := api.SummaryOf(inputs)
	cmd := api.FactCommandID("s4", sum.Key, sum.Text, sum.Sources)
	md["consolidation_command"] = cmd
	if sum.Key != summaryKey {
		t.Fatalf("summary key %q", sum.Key)
	}
	none := int64(-1)
	if _, err := c.Put(ctx, client.Agent("helper"), &memoryv1.PutEntryRequest{CommandId: cmd, Key: sum.Key, Value: []byte(sum.Text),
		MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Metadata: md, By: "consolidation", ExpectedVersion: &none}); err != nil {
		t.Fatal(err)
	}
	n1.Kill()
	nc.Close()
	_, nc2 := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir, cfg.Consolidation.SummaryAfter = dir, 3 })
	c2 := client.New(nc2)
	for range 2 { // the restart's run, then one more: nothing new
		if _, err := c2.Consolidate(ctx, "s4", false); err != nil {
			t.Fatal(err)
		}
	}
	eps := episodesInAgent(t, c2)
	if len(eps) != 5 {
		t.Fatalf("episodes %v", keysOf(eps))
	}
	for k, e := range eps {
		h, err := c2.History(ctx, client.Agent("helper"), k)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case k == summaryKey:
			if len(h) != 1 {
				t.Errorf("summary: %d versions, want 1", len(h))
			}
		case len(h) != 2 || e.GetMetadata()["consolidated_into"] != summaryKey:
			t.Errorf("%s: %d versions, into %q; want 2, marked once", k, len(h), e.GetMetadata()["consolidated_into"])
		}
	}
}

// TestConsolidateSynonymKeys: facts an earlier (LLM) extraction filed
// under synonyms of the deterministic attributes (current_city,
// allergies/peanuts) merge into the canonical keys: marked
// consolidated_into them, their values kept in their history, one entry
// of each fact left to show.
func TestConsolidateSynonymKeys(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for _, f := range []struct{ attr, value string }{{"current_city", "Lisbon"}, {"allergies/peanuts", "peanuts"}} {
		if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "fact/user/" + f.attr, Value: []byte(f.attr + ": " + f.value),
			By: "consolidation", Metadata: map[string]string{"subject": "user", "attribute": f.attr, "fact_value": f.value, "extractor": "llm"}}); err != nil {
			t.Fatal(err)
		}
	}
	converse(t, c, "s1", "u1", "I moved to Porto last month.", "Nice!", "I'm allergic to peanuts.", "Noted.")
	for range 2 { // and a re-run: nothing new
		if _, err := c.Consolidate(ctx, "s1", false); err != nil {
			t.Fatal(err)
		}
	}
	for old, canon := range map[string]string{"fact/user/current_city": "fact/user/home_city", "fact/user/allergies/peanuts": "fact/user/allergy/peanuts"} {
		e, err := c.GetEntry(ctx, client.User("u1"), canon, 0)
		if err != nil {
			t.Fatalf("%s: %v", canon, err)
		}
		if e.GetMetadata()["consolidated_into"] != "" {
			t.Errorf("%s is marked: %v", canon, e.GetMetadata())
		}
		h, err := c.History(ctx, client.User("u1"), old)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 || h[1].GetMetadata()["consolidated_into"] != canon || string(h[1].GetValue()) != string(h[0].GetValue()) {
			t.Fatalf("%s: %d versions, last %v; want 2, the value kept, marked into %s", old, len(h), h[len(h)-1].GetMetadata(), canon)
		}
	}
	if e, _ := c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0); !strings.Contains(factValue(e), "Porto") {
		t.Fatalf("home_city %v", e)
	}
}
