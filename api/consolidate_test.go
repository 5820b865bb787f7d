package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func assistant(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: text}
}

// converse creates session id of user u and appends the turns
// (alternating user, assistant).
func converse(t *testing.T, c *client.Client, id, u string, turns ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: u, AgentId: "helper", SystemPrompt: "You help."}); err != nil {
		t.Fatal(err)
	}
	for i, text := range turns {
		m := user(text)
		if i%2 == 1 {
			m = assistant(text)
		}
		if _, err := c.AppendMessages(ctx, id, m); err != nil {
			t.Fatal(err)
		}
	}
}

// waitEntry polls scope for key until it exists.
func waitEntry(t *testing.T, c *client.Client, scope client.Scope, key string) *memoryv1.Entry {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		e, err := c.GetEntry(context.Background(), scope, key, 0)
		if err == nil {
			return e
		}
		if client.Code(err) != 404 || time.Now().After(deadline) {
			t.Fatalf("%s %s: %v", scope.Subject("get"), key, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const shipKey = "fact/we/decision/ship"

// TestConsolidateCorrection: a decision and its later correction end as
// one current entry (the corrected value) whose history holds the old one,
// written at termination into the user's scope with its source, memory
// type and confidence; a second run writes nothing.
func TestConsolidateCorrection(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1",
		"Hi! I'm allergic to peanuts, just so you know.", "Noted, no peanuts.",
		"We decided to ship on Friday.", "Great, Friday it is.",
		"Hmm, how long will the review take?", "About a day.",
		"Actually, make it Monday.", "Monday then.")
	if _, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	waitEntry(t, c, client.User("u1"), "consolidated/s1")
	cur, err := c.GetEntry(ctx, client.User("u1"), shipKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := factValue(cur); !strings.HasSuffix(got, "ship on Monday") || cur.GetVersion() != 2 {
		t.Fatalf("current %q v%d, want ship on Monday at v2", got, cur.GetVersion())
	}
	md := cur.GetMetadata()
	if md["agentmem.source_session"] != "s1" || md["source_messages"] == "" || md["confidence"] == "" || md["replaces"] == "" ||
		cur.GetMemoryType() != memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC {
		t.Fatalf("entry metadata %v type %v", md, cur.GetMemoryType())
	}
	h, err := c.History(ctx, client.User("u1"), shipKey)
	if err != nil || len(h) != 2 || !strings.HasSuffix(factValue(h[0]), "ship on Friday") {
		t.Fatalf("history %v %v, want Friday then Monday", err, h)
	}
	if e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/allergy/peanuts", 0); err != nil || e.GetVersion() != 1 {
		t.Fatalf("allergy: %v %v", err, e)
	}
	// On demand again: nothing new.
	rep, err := c.Consolidate(ctx, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.GetFacts()) != 3 || rep.GetExtractor() != "deterministic" {
		t.Fatalf("facts %v", rep.GetFacts())
	}
	for _, f := range rep.GetFacts() {
		if f.GetOutcome() != "duplicate" && f.GetOutcome() != "unchanged" {
			t.Errorf("second run: %s %q outcome %q, want duplicate or unchanged", f.GetKey(), f.GetValue(), f.GetOutcome())
		}
	}
	if h, _ := c.History(ctx, client.User("u1"), shipKey); len(h) != 2 {
		t.Fatalf("history after a second run: %d versions, want 2", len(h))
	}
}

// TestConsolidateExactlyOnceAfterCrash: the node dies (kill) right after a
// session terminates, whatever part of the extraction it had written; on
// restart the sweep completes it, and every fact is written once.
func TestConsolidateExactlyOnceAfterCrash(t *testing.T) {
	dir := t.TempDir()
	n1, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir = dir })
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1",
		"I moved to Lisbon in March.", "Nice!",
		"My daughter's name is Ana.", "Lovely name.",
		"I'm allergic to shellfish.", "Noted.",
		"Sorry, I meant I moved to Porto, not Lisbon.", "Porto, got it.")
	// A crash part-way: the first fact is written as consolidation writes
	// it (same command id, kept in metadata), the rest is not.
	dry, err := c.Consolidate(ctx, "s1", true)
	if err != nil || len(dry.GetFacts()) != 4 {
		t.Fatalf("dry run: %v %v", err, dry.GetFacts())
	}
	f0 := dry.GetFacts()[0]
	if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: f0.GetKey(), Value: []byte(f0.GetValue()),
		CommandId: apiFactCommandID("s1", f0), By: "consolidation", MemoryType: f0.GetMemoryType(),
		Metadata: map[string]string{"consolidation_command": apiFactCommandID("s1", f0), "subject": "user", "attribute": "home_city", "fact_value": "Lisbon"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	n1.Kill() // the background consolidation may be anywhere, or done
	nc.Close()
	_, nc2 := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir = dir })
	c2 := client.New(nc2)
	waitEntry(t, c2, client.User("u1"), "consolidated/s1")
	want := map[string][]string{
		"fact/user/home_city":         {"Lisbon", "Porto"},
		"fact/daughter/name":          {"Ana"},
		"fact/user/allergy/shellfish": {"shellfish"},
	}
	for key, values := range want {
		h, err := c2.History(ctx, client.User("u1"), key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if len(h) != len(values) {
			t.Errorf("%s: %d versions, want %d (exactly once)", key, len(h), len(values))
			continue
		}
		for i, v := range values {
			if !strings.HasSuffix(factValue(h[i]), v) {
				t.Errorf("%s v%d = %q, want …%s", key, i+1, h[i].GetValue(), v)
			}
		}
	}
}

// TestConsolidateTenancy: each user's facts land in that user's scope
// only, whoever asks for the consolidation.
func TestConsolidateTenancy(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "sa", "alice", "I live in Oslo.", "Cool.")
	converse(t, c, "sb", "bob", "I live in Lima and I prefer tea.", "Noted.")
	for _, id := range []string{"sa", "sb"} {
		if _, err := c.Consolidate(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}
	a, err := c.ListEntries(ctx, client.User("alice"), &memoryv1.ListEntriesRequest{Prefix: "fact/"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.ListEntries(ctx, client.User("bob"), &memoryv1.ListEntriesRequest{Prefix: "fact/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.GetEntries()) != 1 || !strings.HasSuffix(factValue(a.GetEntries()[0]), "Oslo") {
		t.Fatalf("alice: %v", a.GetEntries())
	}
	if len(b.GetEntries()) != 2 {
		t.Fatalf("bob: %v", b.GetEntries())
	}
	for _, e := range b.GetEntries() {
		if strings.Contains(string(e.GetValue()), "Oslo") || e.GetMetadata()["agentmem.source_session"] != "sb" || factValue(e) == "" {
			t.Fatalf("bob holds %q from %s", e.GetValue(), e.GetMetadata()["agentmem.source_session"])
		}
	}
}

// TestConsolidateReview: with strategy review a new value waits as a
// proposal; conflicts lists it beside the current value, settle takes it.
func TestConsolidateReview(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.Configure(ctx, client.User("u1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
		t.Fatal(err)
	}
	converse(t, c, "s1", "u1", "I live in Oslo.", "Cool.")
	if _, err := c.Consolidate(ctx, "s1", false); err != nil {
		t.Fatal(err)
	}
	converse(t, c, "s2", "u1", "Big news: I moved to Bergen last week.", "Congrats!")
	rep, err := c.Consolidate(ctx, "s2", false)
	if err != nil || len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetOutcome() != "review" {
		t.Fatalf("%v %v", err, rep.GetFacts())
	}
	cs, err := c.Conflicts(ctx, client.User("u1"))
	if err != nil || len(cs) != 1 || !strings.HasSuffix(factValue(cs[0].GetCurrent()), "Oslo") ||
		!strings.HasSuffix(factValue(cs[0].GetProposed()), "Bergen") {
		t.Fatalf("conflicts %v %v", err, cs)
	}
	if _, err := c.Settle(ctx, client.User("u1"), cs[0].GetKey(), true); err != nil {
		t.Fatal(err)
	}
	e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil || !strings.HasSuffix(factValue(e), "Bergen") || e.GetVersion() != 2 {
		t.Fatalf("after settle: %v %v", err, e)
	}
	if cs, _ := c.Conflicts(ctx, client.User("u1")); len(cs) != 0 {
		t.Fatalf("conflicts after settle: %v", cs)
	}
	if _, err := c.Configure(ctx, client.User("u1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "vote"}}); client.Code(err) != 400 {
		t.Fatalf("bad strategy: %v, want 400", err)
	}
}

// TestSettleRetry: a settle sent again with its command id (its reply
// lost) answers the key's current entry as a duplicate and writes nothing;
// another command finds nothing to settle (404 key).
func TestSettleRetry(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.Configure(ctx, client.User("u1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
		t.Fatal(err)
	}
	converse(t, c, "s1", "u1", "I live in Oslo.", "Cool.")
	converse(t, c, "s2", "u1", "Big news: I moved to Bergen last week.", "Congrats!")
	for _, id := range []string{"s1", "s2"} {
		if _, err := c.Consolidate(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(cmd string) (string, *memoryv1.EntryReply) {
		code, desc, data := rawRequest(t, nc, "mem.v1.scope.user.u1.settle",
			marshal(t, &memoryv1.SettleConflictRequest{CommandId: cmd, Key: "fact/user/home_city", Accept: true}), false)
		if code != "" {
			return code + " " + desc, nil
		}
		r := &memoryv1.EntryReply{}
		if err := proto.Unmarshal(data, r); err != nil {
			t.Fatal(err)
		}
		return "", r
	}
	errText, first := settle("settle-1")
	if errText != "" || first.GetResult().GetDuplicate() || first.GetEntry().GetVersion() != 2 {
		t.Fatalf("settle: %s %v", errText, first)
	}
	errText, again := settle("settle-1")
	if errText != "" || !again.GetResult().GetDuplicate() || again.GetEntry().GetVersion() != 2 ||
		!strings.HasSuffix(factValue(again.GetEntry()), "Bergen") {
		t.Fatalf("retried settle: %s %v", errText, again)
	}
	if errText, _ := settle("settle-2"); !strings.HasPrefix(errText, "404") {
		t.Fatalf("another settle: %q, want 404", errText)
	}
	h, err := c.History(ctx, client.User("u1"), "fact/user/home_city")
	if err != nil || len(h) != 2 {
		t.Fatalf("history %v %d versions, want 2 (the retry wrote nothing)", err, len(h))
	}
}

func apiFactCommandID(session string, f *memoryv1.ExtractedFact) string {
	return api.FactCommandID(session, f.GetKey(), f.GetValue(), f.GetMessageIds())
}

// TestConsolidateLLM: with --consolidate-llm the node extracts with the
// --llm-* endpoint (here a local test server); when the endpoint answers
// nonsense the deterministic extractor serves and the facts still land.
func TestConsolidateLLM(t *testing.T) {
	answer := `{"facts":[{"subject":"user","attribute":"home_city","value":"Oslo","type":"semantic","confidence":0.9,"message_ids":["%s"]}]}`
	var good atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := regexp.MustCompile(`\[([^\]]+)\] USER: I live in Oslo`).FindSubmatch(body)
		content := "I could not find anything."
		if good.Load() && id != nil {
			content = fmt.Sprintf(answer, id[1])
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}})
	}))
	defer srv.Close()
	_, nc := node.StartForTest(t, func(cfg *node.Config) {
		cfg.LLM.BaseURL, cfg.LLM.Model, cfg.Consolidation.LLM = srv.URL, "stand-in", true
	})
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "I live in Oslo.", "Nice.")
	rep, err := c.Consolidate(ctx, "s1", true)
	if err != nil || rep.GetExtractor() != "deterministic" || len(rep.GetFacts()) != 1 {
		t.Fatalf("nonsense answer: %v %v", err, rep)
	}
	good.Store(true)
	rep, err = c.Consolidate(ctx, "s1", false)
	if err != nil || rep.GetExtractor() != "llm" || len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetOutcome() != "written" {
		t.Fatalf("llm: %v %v", err, rep)
	}
	e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil || e.GetMetadata()["extractor"] != "llm" || !strings.Contains(string(e.GetValue()), "Oslo") {
		t.Fatalf("entry %v %v", err, e)
	}
}

// factValue is the value of a fact entry consolidation wrote (its entry
// value also says what it is of, and what the user said).
func factValue(e *memoryv1.Entry) string { return e.GetMetadata()["fact_value"] }

// TestConsolidatedMemoryInNewSession: a new session of the same user gets
// the corrected value in its memory section, never the old one alone, and
// never consolidation's bookkeeping (the consolidated/<id> marker).
func TestConsolidatedMemoryInNewSession(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "We decided to ship the release on Friday.", "Friday it is.", "Actually, make it Monday.", "Monday then.")
	if _, err := c.Consolidate(ctx, "s1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, "s2", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "helper", SystemPrompt: "You help."}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.AppendMessages(ctx, "s2", user("When do we ship the release?")); err != nil {
			t.Fatal(err)
		}
		cx, err := c.Context(ctx, "s2")
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
		if strings.Contains(got, "ship the release on Monday") {
			if strings.Contains(got, "consolidated/") || strings.Contains(got, "Friday") {
				t.Fatalf("memory section:\n%s", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new session's memory section never held the current value:\n%s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConsolidationReplay: consolidation's outcome is entries in the log; a
// restart replays them byte for byte and extracts nothing again.
func TestConsolidationReplay(t *testing.T) {
	dir := t.TempDir()
	n1, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir = dir })
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "I live in Oslo and I prefer green tea.", "Noted.", "Actually I moved to Bergen.", "Ok.")
	if _, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	waitEntry(t, c, client.User("u1"), "consolidated/s1")
	read := func(c *client.Client) []byte {
		l, err := c.ListEntries(ctx, client.User("u1"), &memoryv1.ListEntriesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, e := range l.GetEntries() {
			h, err := c.History(ctx, client.User("u1"), e.GetKey())
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range h {
				pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				b = append(b, pb...)
			}
		}
		return b
	}
	before := read(c)
	nc.Close()
	if err := n1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, nc2 := node.StartForTest(t, func(cfg *node.Config) { cfg.DataDir = dir })
	c2 := client.New(nc2)
	if after := read(c2); !bytes.Equal(before, after) || len(before) == 0 {
		t.Fatalf("entries after a restart differ (%d bytes before, %d after)", len(before), len(after))
	}
}

// TestConsolidateEveryTurnsAndJSON: with --consolidate-every-turns 2 the
// node consolidates after the second user turn, without a terminate; the
// endpoint answers JSON as the other endpoints do, and 404 for a session
// that does not exist.
func TestConsolidateEveryTurnsAndJSON(t *testing.T) {
	_, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.Consolidation.EveryTurns = 2 })
	c := client.New(nc)
	converse(t, c, "s1", "u1", "I'm allergic to peanuts.", "Noted.")
	if _, err := c.GetEntry(context.Background(), client.User("u1"), "consolidated/s1", 0); client.Code(err) != 404 {
		t.Fatalf("consolidated after one user turn: %v", err)
	}
	if _, err := c.AppendMessages(context.Background(), "s1", user("And I live in Lima.")); err != nil {
		t.Fatal(err)
	}
	waitEntry(t, c, client.User("u1"), "consolidated/s1")
	waitEntry(t, c, client.User("u1"), "fact/user/home_city")
	code, desc, body := rawRequest(t, nc, "mem.v1.session.s1.consolidate", []byte(`{"dry_run":true}`), true)
	if code != "" || !strings.Contains(string(body), `"extractor":"deterministic"`) || !strings.Contains(string(body), `"outcome":"dry_run"`) {
		t.Fatalf("JSON: %s %s %s", code, desc, body)
	}
	if code, _, _ := rawRequest(t, nc, "mem.v1.session.nope.consolidate", []byte(`{}`), true); code != "404" {
		t.Fatalf("missing session: code %q, want 404", code)
	}
}

// TestConsolidatedInto: a changed preference is filed under its own key;
// the one it replaces is marked consolidated_into the new key (its value
// kept in history) and no longer reaches the memory section.
func TestConsolidatedInto(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "I prefer tea.", "Noted.", "Actually, I prefer coffee now.", "Coffee it is.")
	if _, err := c.Consolidate(ctx, "s1", false); err != nil {
		t.Fatal(err)
	}
	old, err := c.GetEntry(ctx, client.User("u1"), "fact/user/prefers/tea", 0)
	if err != nil || old.GetMetadata()["consolidated_into"] != "fact/user/prefers/coffee" || old.GetVersion() != 2 {
		t.Fatalf("tea: %v %v", err, old)
	}
	if e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/prefers/coffee", 0); err != nil || e.GetMetadata()["replaces"] != "tea" {
		t.Fatalf("coffee: %v %v", err, e)
	}
	// A second run changes nothing.
	if _, err := c.Consolidate(ctx, "s1", false); err != nil {
		t.Fatal(err)
	}
	if h, _ := c.History(ctx, client.User("u1"), "fact/user/prefers/tea"); len(h) != 2 {
		t.Fatalf("tea history after a second run: %d versions, want 2", len(h))
	}
}

// TestConsolidateLLMMerge: in a scope whose conflict strategy is "llm" the
// --llm-* endpoint settles a new value; when it fails, last write wins.
func TestConsolidateLLMMerge(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": `{"value":"Bergen (moved from Oslo)"}`}}}})
	}))
	defer srv.Close()
	_, nc := node.StartForTest(t, func(cfg *node.Config) { cfg.LLM.BaseURL, cfg.LLM.Model = srv.URL, "stand-in" })
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.Configure(ctx, client.User("u1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "llm"}}); err != nil {
		t.Fatal(err)
	}
	converse(t, c, "s1", "u1", "I live in Oslo.", "Cool.")
	converse(t, c, "s2", "u1", "I moved to Bergen last week.", "Congrats!")
	converse(t, c, "s3", "u1", "I moved to Tromsø in May.", "Brr!")
	for _, id := range []string{"s1", "s2"} {
		if _, err := c.Consolidate(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}
	e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil || factValue(e) != "Bergen (moved from Oslo)" || e.GetMetadata()["merged_by"] != "llm" || e.GetVersion() != 2 {
		t.Fatalf("merged: %v %v", err, e)
	}
	fail.Store(true)
	if _, err := c.Consolidate(ctx, "s3", false); err != nil {
		t.Fatal(err)
	}
	e, err = c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil || factValue(e) != "Tromsø" || e.GetMetadata()["merged_by"] != "" {
		t.Fatalf("endpoint down, last write wins: %v %v", err, e)
	}
}

// TestConsolidateRetraction: a fact the user says no longer holds is
// deleted (an ordinary delete: the value stays in the key's history), and
// a second run changes nothing.
func TestConsolidateRetraction(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "I'm allergic to peanuts.", "Noted.")
	if _, err := c.Consolidate(ctx, "s1", false); err != nil {
		t.Fatal(err)
	}
	converse(t, c, "s2", "u1", "Great news, I'm not allergic to peanuts anymore!", "Wonderful!")
	for range 2 {
		rep, err := c.Consolidate(ctx, "s2", false)
		if err != nil || len(rep.GetFacts()) != 1 || !rep.GetFacts()[0].GetRetract() {
			t.Fatalf("%v %v", err, rep)
		}
	}
	if _, err := c.GetEntry(ctx, client.User("u1"), "fact/user/allergy/peanuts", 0); client.Code(err) != 404 {
		t.Fatalf("a retracted fact is still there: %v", err)
	}
	h, err := c.History(ctx, client.User("u1"), "fact/user/allergy/peanuts")
	if err != nil || len(h) != 2 || !h[1].GetDeleted() || factValue(h[0]) != "peanuts" {
		t.Fatalf("history %v %v, want the value then its deletion", err, h)
	}
}
