package segmented

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

func smallSession(t *testing.T) *State {
	return mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 3000, ReservedOutputTokens: 500, SystemPrompt: "Be brief."})
}

func status(t *testing.T, s *State, a memoryv1.StatusAction) error {
	t.Helper()
	evs, err := s.DecideStatus(&memoryv1.StatusRequest{Action: a})
	if err == nil {
		commit(t, s, "", evs)
	}
	return err
}

func TestLifecycle(t *testing.T) {
	const (
		pause     = memoryv1.StatusAction_STATUS_ACTION_PAUSE
		resume    = memoryv1.StatusAction_STATUS_ACTION_RESUME
		terminate = memoryv1.StatusAction_STATUS_ACTION_TERMINATE
		archive   = memoryv1.StatusAction_STATUS_ACTION_ARCHIVE
	)
	s := New()
	if _, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("hi")}}, testEnv(t)); rejection(err).Code != 404 {
		t.Fatalf("append before create: %v", err)
	}
	if _, err := s.DecideStatus(&memoryv1.StatusRequest{Action: pause}); rejection(err).Code != 404 {
		t.Fatalf("status before create: %v", err)
	}
	s = smallSession(t)
	if _, err := s.DecideCreate(&memoryv1.CreateSessionRequest{}, "sess-1", testEnv(t)); rejection(err).Code != 409 {
		t.Fatalf("create twice: %v", err)
	}
	if s.Status() != statusCreated {
		t.Fatalf("status %v", s.Status())
	}
	if err := status(t, s, pause); rejection(err).Code != 409 || !strings.Contains(err.Error(), "from CREATED to PAUSED") {
		t.Fatalf("pause CREATED: %v", err)
	}
	evs := appendOK(t, s, user("hello"))
	if sc, ok := evs[0].(*memoryv1.SessionStatusChanged); !ok || sc.To != statusActive {
		t.Fatalf("first append batch starts with %v", evs[0])
	}
	if s.Status() != statusActive {
		t.Fatalf("status %v", s.Status())
	}
	steps := []struct {
		action memoryv1.StatusAction
		code   int
		want   memoryv1.SessionStatus
	}{
		{resume, 409, statusActive},
		{archive, 409, statusActive},
		{pause, 0, statusPaused},
		{pause, 409, statusPaused},
		{resume, 0, statusActive},
		{pause, 0, statusPaused},
		{terminate, 0, statusTerminated},
		{resume, 409, statusTerminated},
		{terminate, 409, statusTerminated},
		{archive, 0, statusArchived},
		{archive, 409, statusArchived},
		{memoryv1.StatusAction_STATUS_ACTION_UNSPECIFIED, 400, statusArchived},
	}
	for i, st := range steps {
		err := status(t, s, st.action)
		if (err == nil) != (st.code == 0) || (err != nil && rejection(err).Code != st.code) {
			t.Fatalf("step %d %v: %v", i, st.action, err)
		}
		if s.Status() != st.want {
			t.Fatalf("step %d: status %v, want %v", i, s.Status(), st.want)
		}
		if s.Status() == statusPaused {
			if _, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("x")}}, testEnv(t)); rejection(err).Code != 409 {
				t.Fatalf("append while paused: %v", err)
			}
		}
	}
	// ARCHIVED is read-only.
	env := testEnv(t)
	_, e1 := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("x")}}, env)
	_, e2 := s.DecideKernel(&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_SetFact{SetFact: &memoryv1.Fact{Key: "k", Value: "v"}}}, env)
	_, e3 := s.DecideStateSet("session:k", []byte("v"))
	_, e4 := s.DecideReplaceSummary("s1", "x", "", env)
	for i, err := range []error{e1, e2, e3, e4} {
		if rejection(err) == nil || rejection(err).Code != 409 {
			t.Errorf("mutation %d on ARCHIVED: %v", i, err)
		}
	}
}

func TestTerminateClearsSessionState(t *testing.T) {
	s := smallSession(t)
	for _, k := range []string{"session:b", "session:a"} {
		evs, err := s.DecideStateSet(k, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, "", evs)
	}
	if v, ok := s.StateValue("session:a"); !ok || string(v) != "session:a" {
		t.Fatalf("StateValue = %q %v", v, ok)
	}
	if es := s.StateEntries(); len(es) != 2 || es[0].Key != "session:a" {
		t.Fatalf("entries %v", es)
	}
	if _, err := s.DecideStateSet("temp:a", nil); rejection(err).Code != 400 {
		t.Fatalf("temp key: %v", err)
	}
	if _, err := s.DecideStateDelete("session:zz"); rejection(err).Code != 404 {
		t.Fatalf("delete absent: %v", err)
	}
	evs, err := s.DecideStatus(&memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_TERMINATE})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := evs[1].(*memoryv1.SessionStateCleared); !ok || len(c.Keys) != 2 {
		t.Fatalf("terminate batch %v", evs)
	}
	commit(t, s, "", evs)
	if len(s.StateEntries()) != 0 {
		t.Fatal("session state survived termination")
	}
}

func TestAppendStatefulChecks(t *testing.T) {
	s := smallSession(t)
	appendOK(t, s, &memoryv1.MessageInput{Id: "q1", Role: memoryv1.Role_ROLE_USER, Content: "find it"}, assistant("", call("a", "search"), call("b", "search")))
	env := testEnv(t)
	try := func(code int, field string, msgs ...*memoryv1.MessageInput) {
		t.Helper()
		before := marshal(t, s.Snapshot())
		_, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, env)
		checkRejection(t, err, code, field)
		if !bytes.Equal(before, marshal(t, s.Snapshot())) {
			t.Fatal("rejected append changed the state")
		}
	}
	try(409, "messages[0].id", &memoryv1.MessageInput{Id: "q1", Role: memoryv1.Role_ROLE_USER, Content: "again"})
	try(400, "messages[1].tool_call_id", toolResult("a", "ok"), toolResult("zzz", "ok"))
	try(400, "messages[1].tool_call_id", toolResult("a", "ok"), toolResult("a", "twice"))
	try(409, "messages[0].tool_calls[0].id", assistant("", call("b", "search")))
	evs := appendOK(t, s, toolResult("b", "B"), toolResult("a", "A"))
	ma := evs[0].(*memoryv1.MessagesAppended)
	if len(ma.ToolResultRefs) != 2 || ma.ToolResultRefs[0].ToolName != "search" || ma.Messages[0].Id != "m3" {
		t.Fatalf("appended %v", ma)
	}
	try(400, "messages[0].tool_call_id", toolResult("a", "late duplicate"))
	if m := ma.Messages[0]; m.Tokens != messageTokens(tokenizerT(t), "B", nil) || m.Turn != 1 || m.CreatedUnixNano != env.NowUnixNano {
		t.Fatalf("message %v", m)
	}
}

func TestToolResultRefsKeepTen(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	appendOK(t, s, user("go"))
	for i := range 13 {
		id := fmt.Sprintf("c%d", i)
		appendOK(t, s, assistant("", call(id, "fetch")), toolResult(id, "r"))
	}
	refs := s.Snapshot().Kernel.ToolResults
	if len(refs) != MaxToolResultRefs || refs[0].ToolCallId != "c3" || refs[9].ToolCallId != "c12" {
		t.Fatalf("refs %v", refs)
	}
}

func kernelOK(t *testing.T, s *State, req *memoryv1.KernelRequest) []proto.Message {
	t.Helper()
	evs, err := s.DecideKernel(req, testEnv(t))
	if err != nil {
		t.Fatalf("kernel: %v", err)
	}
	commit(t, s, "", evs)
	return evs
}

func cacheSchema(name string) *memoryv1.KernelRequest {
	return &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_CacheSchema{CacheSchema: &memoryv1.SchemaEntry{Name: name, Schema: "id int, name text"}}}
}

func TestSchemaLRU(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	for i := range 10 {
		evs := kernelOK(t, s, cacheSchema(fmt.Sprintf("t%d", i)))
		if ev := evs[0].(*memoryv1.KernelSchemaCached); len(ev.Evicted) != 0 || ev.Schema.Tokens == 0 {
			t.Fatalf("event %v", ev)
		}
	}
	kernelOK(t, s, cacheSchema("t0")) // t0 becomes the most recent
	evs := kernelOK(t, s, cacheSchema("t10"))
	if ev := evs[0].(*memoryv1.KernelSchemaCached); len(ev.Evicted) != 1 || ev.Evicted[0] != "t1" {
		t.Fatalf("evicted %v, want [t1]", ev.Evicted)
	}
	var names []string
	for _, sc := range s.Snapshot().Kernel.Schemas {
		names = append(names, sc.Name)
	}
	if got := strings.Join(names, ","); got != "t2,t3,t4,t5,t6,t7,t8,t9,t0,t10" {
		t.Fatalf("LRU order %s", got)
	}
}

func TestKernelOps(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	env := testEnv(t)
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DefineTool{DefineTool: &memoryv1.ToolDefinition{Name: "zeta", ParametersJson: `{}`}}})
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DefineTool{DefineTool: &memoryv1.ToolDefinition{Name: "alpha", Description: "first"}}})
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_SetFact{SetFact: &memoryv1.Fact{Key: "user.name", Value: "Ada"}}})
	k := s.Snapshot().Kernel
	if len(k.Tools) != 2 || k.Tools[0].Name != "alpha" || len(k.Facts) != 1 {
		t.Fatalf("kernel %v", k)
	}
	ctx := s.Context()
	if ctx.Layers.Kernel == 0 || ctx.Messages[0].Layer != LayerKernel || ctx.Messages[0].Content != "Tool alpha: first" {
		t.Fatalf("context %v", ctx.Messages)
	}
	for _, tc := range []struct {
		req   *memoryv1.KernelRequest
		code  int
		field string
	}{
		{&memoryv1.KernelRequest{}, 400, "op"},
		{&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_RemoveTool{RemoveTool: "nope"}}, 404, "remove_tool"},
		{&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DeleteFact{DeleteFact: "nope"}}, 404, "delete_fact"},
		{&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DefineTool{DefineTool: &memoryv1.ToolDefinition{}}}, 400, "define_tool.name"},
		{&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DefineTool{DefineTool: &memoryv1.ToolDefinition{Name: "x", ParametersJson: "{"}}}, 400, "define_tool.parameters_json"},
		{&memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{SystemPrompt: strings.Repeat("word ", 200000)}}}, 413, "update_rom.system_prompt"},
	} {
		_, err := s.DecideKernel(tc.req, env)
		checkRejection(t, err, tc.code, tc.field)
	}
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_RemoveTool{RemoveTool: "alpha"}})
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_DeleteFact{DeleteFact: "user.name"}})
	if k := s.Snapshot().Kernel; len(k.Tools) != 1 || len(k.Facts) != 0 {
		t.Fatalf("kernel %v", k)
	}
}

func TestRomActivatesAtNextTurn(t *testing.T) {
	s := smallSession(t)
	appendOK(t, s, user("first question"))
	kernelOK(t, s, &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{SystemPrompt: "Be very brief."}}})
	if v := s.Context().RomVersion; v != 1 {
		t.Fatalf("ROM version %d right after update_rom", v)
	}
	evs := appendOK(t, s, assistant("answer"), assistant("more"))
	for _, ev := range evs {
		if _, ok := ev.(*memoryv1.RomActivated); ok {
			t.Fatal("ROM activated within the turn")
		}
	}
	if s.Snapshot().PendingRom.GetVersion() != 2 || s.Context().RomVersion != 1 {
		t.Fatal("pending ROM lost or applied early")
	}
	evs = appendOK(t, s, user("second question"))
	if ra, ok := evs[0].(*memoryv1.RomActivated); !ok || ra.Version != 2 {
		t.Fatalf("batch %v, want RomActivated first", evs)
	}
	ctx := s.Context()
	if ctx.RomVersion != 2 || ctx.Turn != 2 || ctx.Messages[0].Content != "Be very brief." || s.Snapshot().PendingRom != nil {
		t.Fatalf("after activation: rom v%d turn %d %q", ctx.RomVersion, ctx.Turn, ctx.Messages[0].Content)
	}
}

func TestReplaceSummary(t *testing.T) {
	s := smallSession(t)
	for i := range 40 {
		appendOK(t, s, user(fmt.Sprintf("Question %d: what did Alice say about the 3 invoices?", i)),
			assistant(strings.Repeat("She said the invoices were paid in March by Bob. ", 5)))
	}
	ps := s.PendingSummaries()
	if len(ps) == 0 {
		t.Fatal("no summaries after 40 turns in a 2500-token budget")
	}
	env := testEnv(t)
	p := ps[0]
	if _, err := s.DecideReplaceSummary(p.Id, strings.Repeat("longer text ", 500), "llm", env); rejection(err).Code != 409 {
		t.Fatalf("larger replacement: %v", err)
	}
	if _, err := s.DecideReplaceSummary("s999999", "x", "llm", env); rejection(err).Code != 409 {
		t.Fatalf("missing summary: %v", err)
	}
	evs, err := s.DecideReplaceSummary(p.Id, "Alice asked about 3 invoices; Bob paid them in March.", "llm", env)
	if err != nil {
		t.Fatal(err)
	}
	used := s.UsedTokens()
	commit(t, s, "", evs)
	if s.UsedTokens() > used {
		t.Fatal("replacement grew the context")
	}
	for _, q := range s.PendingSummaries() {
		if q.Id == p.Id {
			t.Fatal("replaced summary still pending")
		}
	}
	checkInvariants(t, s)
}

func TestCompressionKeepsToolGroupsAndLatestUser(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2500, ReservedOutputTokens: 500})
	long := strings.Repeat("The shipment to Berlin left on day 12 with 40 boxes. ", 6)
	for i := range 30 {
		c1, c2 := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		appendOK(t, s, user(fmt.Sprintf("Where is order %d?", i)), assistant("", call(c1, "track"), call(c2, "eta")))
		appendOK(t, s, toolResult(c2, long), assistant("checking"), toolResult(c1, long), assistant("It is in Berlin."))
		checkInvariants(t, s)
	}
	snap := s.Snapshot()
	if snap.Compressions == 0 {
		t.Fatal("no compression happened")
	}
	// Groups are whole: for every verbatim assistant with calls, both results are verbatim.
	verb := map[string]bool{}
	for _, e := range snap.L1 {
		if m := e.GetMessage(); m != nil && m.Role == memoryv1.Role_ROLE_TOOL {
			verb[m.ToolCallId] = true
		}
	}
	for _, e := range snap.L1 {
		if m := e.GetMessage(); m != nil {
			for _, c := range m.ToolCalls {
				if !verb[c.Id] {
					t.Fatalf("call %s verbatim without its result", c.Id)
				}
			}
		}
	}
	// A huge message cannot fit: 413, state unchanged.
	before := marshal(t, s.Snapshot())
	_, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user(strings.Repeat("numbers 1 2 3 ", 2000))}}, testEnv(t))
	if r := rejection(err); r == nil || r.Code != 413 || !strings.Contains(r.Reason, "free") {
		t.Fatalf("huge append: %v", err)
	}
	if !bytes.Equal(before, marshal(t, s.Snapshot())) {
		t.Fatal("413 changed the state")
	}
}

func TestPendingCallBlocksOnlyItsGroup(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2500, ReservedOutputTokens: 500})
	appendOK(t, s, user("start"), assistant("", call("slow", "batch_job")))
	for i := range 15 {
		_, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user(fmt.Sprintf("status %d? ", i) + strings.Repeat("still waiting for the job. ", 20))}}, testEnv(t))
		if err != nil {
			// The pending group at the front of L1 blocks compression: the
			// budget is defended by 413, never by splitting the group.
			if rejection(err).Code != 413 {
				t.Fatal(err)
			}
			break
		}
		appendOK(t, s, user(fmt.Sprintf("status %d? ", i)+strings.Repeat("still waiting for the job. ", 20)))
	}
	checkInvariants(t, s)
	if s.snap.L1[1].GetMessage().GetId() != "m2" {
		t.Fatalf("pending call no longer verbatim: %v", s.snap.L1[1])
	}
}

func TestLookupCommandAndMeta(t *testing.T) {
	s := smallSession(t)
	if _, complete := s.CommandWindow(); !complete {
		t.Fatal("a new session's window is not complete")
	}
	for i := range 70 {
		if i == MaxRecentCommands-1 {
			if oldest, complete := s.CommandWindow(); !complete || oldest == 0 {
				t.Fatalf("window of %d commands: oldest %d complete %v", s.Version(), oldest, complete)
			}
		}
		evs, err := s.DecideStateSet("session:k", []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(Meta{CommandID: fmt.Sprintf("cmd-%d", i), Version: s.Version() + 1, Seq: 100 + uint64(i), TimeUnixNano: 5}, evs); err != nil {
			t.Fatal(err)
		}
	}
	if r, ok := s.LookupCommand("cmd-69"); !ok || r.Seq != 169 || r.Version != s.Version() {
		t.Fatalf("LookupCommand = %v %v", r, ok)
	}
	if _, ok := s.LookupCommand("cmd-0"); ok {
		t.Fatal("recent_commands not bounded")
	}
	// The window no longer holds every command: older ones are looked up
	// in the command index from the window's oldest sequence down.
	if oldest, complete := s.CommandWindow(); complete || oldest != 169-MaxRecentCommands+1 {
		t.Fatalf("CommandWindow = %d %v, want %d false", oldest, complete, 169-MaxRecentCommands+1)
	}
	if n := len(s.Snapshot().RecentCommands); n != MaxRecentCommands {
		t.Fatalf("%d recent commands", n)
	}
	if s.LastSeq() != 169 || s.Snapshot().UpdatedUnixNano != 5 {
		t.Fatal("meta not applied")
	}
	// Stale version and unknown events are refused, atomically.
	before := marshal(t, s.Snapshot())
	if err := s.Apply(Meta{Version: s.Version()}, nil); err == nil {
		t.Fatal("stale version applied")
	}
	if err := s.Apply(Meta{Version: s.Version() + 1}, []proto.Message{&memoryv1.SessionStateSet{Key: "session:x"}, &memoryv1.Usage{}}); err == nil {
		t.Fatal("unknown event applied")
	}
	if !bytes.Equal(before, marshal(t, s.Snapshot())) {
		t.Fatal("failed Apply changed the state")
	}
}

// TestAppendCarriesSaidTime checks that MessageInput.said_unix_nano (the time
// of imported history) reaches the Message of the event, beside
// created_unix_nano (the time of the append), and 0 stays 0.
func TestAppendCarriesSaidTime(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	said := &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "we met in 2019", SaidUnixNano: 1_557_000_000_000_000_000}
	evs := appendOK(t, s, said, user("now"))
	var ma *memoryv1.MessagesAppended
	for _, ev := range evs {
		if m, ok := ev.(*memoryv1.MessagesAppended); ok {
			ma = m
		}
	}
	if ma == nil || len(ma.Messages) != 2 {
		t.Fatalf("events %v", evs)
	}
	if m := ma.Messages[0]; m.SaidUnixNano != said.SaidUnixNano || m.CreatedUnixNano == 0 {
		t.Fatalf("message %v", m)
	}
	if m := ma.Messages[1]; m.SaidUnixNano != 0 {
		t.Fatalf("message %v", m)
	}
}
