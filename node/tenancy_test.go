package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// tenants are the principals of examples/auth, connected.
type tenants struct {
	a1, a2, front1, front2, ops *tenant
}

func connectTenants(t *testing.T, tn *tenantNode) tenants {
	return tenants{
		a1:     tn.as(t, "agent-a1", "a1-secret"),
		a2:     tn.as(t, "agent-a2", "a2-secret"),
		front1: tn.as(t, "front-u1", "u1-secret"),
		front2: tn.as(t, "front-u2", "u2-secret"),
		ops:    tn.as(t, "ops", "ops-secret"),
	}
}

// victims is what a2, the victim, owns: its session s-a2 (user u2), its
// private entry, an entry of its user scope, of its session scope, a swarm
// scope only the admin writes, an app entry, and a large-data object.
type victims struct {
	session, dataID string
	subjects        []string
}

func seedVictims(t *testing.T, tu tenants) victims {
	t.Helper()
	ctx := context.Background()
	a2, ops := tu.a2.c, tu.ops.c
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed %s: %v", what, err)
		}
	}
	_, err := a2.CreateSession(ctx, "s-a2", &memoryv1.CreateSessionRequest{UserId: "u2", SystemPrompt: "sys"})
	must("session", err)
	_, err = a2.AppendMessages(ctx, "s-a2", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "my secret plan is tulips"})
	must("append", err)
	_, err = a2.Put(ctx, client.Agent("a2"), &memoryv1.PutEntryRequest{Key: "secret", Value: []byte("a2's secret")})
	must("agent entry", err)
	_, err = a2.Put(ctx, client.User("u2"), &memoryv1.PutEntryRequest{Key: "pref", Value: []byte("u2 likes tea")})
	must("user entry", err)
	_, err = a2.Put(ctx, client.SessionScope("s-a2"), &memoryv1.PutEntryRequest{Key: "note", Value: []byte("session note")})
	must("session scope entry", err)
	_, err = ops.Put(ctx, client.Swarm("x"), &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("swarm plan")})
	must("swarm entry", err)
	_, err = ops.Put(ctx, client.App("shop"), &memoryv1.PutEntryRequest{Key: "policy", Value: []byte("refunds in 30 days")})
	must("app entry", err)
	_, err = ops.Put(ctx, client.Project("p1"), &memoryv1.PutEntryRequest{Key: "goal", Value: []byte("ship")})
	must("project entry", err)
	ref, err := a2.PutData(ctx, []byte("a2's large tool result"), "text/plain", nil, 0)
	must("data", err)
	return victims{session: "s-a2", dataID: ref.GetId(), subjects: []string{
		events.SessionSubject("s-a2"), events.AgentSubject("a2"), events.ScopeSubject("user", "u2"),
		events.ScopeSubject("session_scope", "s-a2"), events.ScopeSubject("swarm", "x"),
		events.ScopeSubject("app", "shop"), events.ScopeSubject("project", "p1"),
	}}
}

// attack is one case of the suite: what the attacker sends and what it
// must get. refused reports whether the outcome is a refusal.
type attack struct {
	name string
	run  func() outcome
	want string // 403, 429, 413, 400, "no route" (the request never reaches the node), "dropped"
}

func refusedAs(o outcome, want string) bool {
	switch want {
	case "no route":
		return o.none == "no responders"
	case "dropped":
		return o.none != ""
	case "contained":
		return o.none == "answered into a1's own account" || o.none == "no answer"
	case "401":
		return o.code == 401
	case "403":
		return o.code == 403
	case "429":
		return o.code == 429
	case "413":
		return o.code == 413
	case "400":
		return o.code == 400
	case "400|413":
		return o.code == 400 || o.code == 413
	case "ok":
		return o.code == 0 && o.none == ""
	case "hidden":
		return o.none == "hidden"
	}
	return false
}

// TestTenantAttackSuite runs the example tenant configuration and, as agent
// a1, tries to read, change or starve what belongs to agent a2, user u2 and
// the admin: every endpoint on their aggregates, identity claims in bodies
// and headers, reply-subject tricks, the JetStream, KV and object-store
// APIs, command-id reuse, min_seq and watch floods, huge and deeply nested
// bodies. After each case the victims' aggregates in the log are
// byte-identical and a2 is still served within a bound. `go test -v` prints
// the table of cases and outcomes.
func TestTenantAttackSuite(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	v := seedVictims(t, tu)
	v.subjects = append(v.subjects, seedAgentTypeVictim(t, tu))
	a1 := tu.a1
	ctx := context.Background()
	if _, err := a1.c.CreateSession(ctx, "s-a1", &memoryv1.CreateSessionRequest{UserId: "u1", Project: "p1"}); err != nil {
		t.Fatal(err)
	}

	var cases []attack
	add := func(want, name string, run func() outcome) { cases = append(cases, attack{name, run, want}) }
	req := func(subject string, body proto.Message, hdr ...string) func() outcome {
		return func() outcome { return a1.do(subject, body, hdr...) }
	}

	// Another agent's private memory: a1's account imports only
	// mem.v1.agent.a1.>, so nothing reaches the node.
	for op, body := range map[string]proto.Message{
		"put": &memoryv1.PutEntryRequest{Key: "secret", Value: []byte("x")}, "get": &memoryv1.GetEntryRequest{Key: "secret"},
		"delete": &memoryv1.DeleteEntryRequest{Key: "secret"}, "list": &memoryv1.ListEntriesRequest{},
		"history": &memoryv1.HistoryRequest{Key: "secret"}, "rollback": &memoryv1.RollbackEntryRequest{Key: "secret", ToVersion: 1},
		"search": &memoryv1.SearchEntriesRequest{Query: "secret"}, "configure": &memoryv1.ConfigureScopeRequest{},
		"watch": &memoryv1.WatchRequest{},
	} {
		add("no route", "agent a2 "+op, req("mem.v1.agent.a2."+op, body))
		// The scope path refuses agent memory whoever asks.
		add("400", "scope agent a2 "+op, req("mem.v1.scope.agent.a2."+op, body))
	}
	// Another user's session: every endpoint.
	for op, body := range map[string]proto.Message{
		"create":         &memoryv1.CreateSessionRequest{UserId: "u2"},
		"append":         &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: "x"}}},
		"context":        &memoryv1.ContextRequest{},
		"get":            &memoryv1.GetSessionRequest{},
		"kernel":         &memoryv1.KernelRequest{},
		"state":          &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_LIST},
		"status":         &memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_TERMINATE},
		"recall":         &memoryv1.RecallRequest{},
		"search":         &memoryv1.SearchRequest{Query: "secret plan"},
		"promote":        &memoryv1.PromoteRequest{MessageIds: []string{"m1"}},
		"clear_recalled": &memoryv1.ClearRecalledRequest{},
		"watch":          &memoryv1.WatchRequest{},
	} {
		add("403", "session s-a2 "+op, req("mem.v1.session.s-a2."+op, body))
	}
	// Shared scopes a1 is not in, or may only read.
	for _, sc := range []string{"user.u2", "session.s-a2", "swarm.x", "workflow.w2", "debate.d"} {
		for op, body := range map[string]proto.Message{
			"get": &memoryv1.GetEntryRequest{Key: "k"}, "put": &memoryv1.PutEntryRequest{Key: "k", Value: []byte("x")},
			"list": &memoryv1.ListEntriesRequest{}, "history": &memoryv1.HistoryRequest{Key: "k"},
			"delete": &memoryv1.DeleteEntryRequest{Key: "k"}, "search": &memoryv1.SearchEntriesRequest{Query: "k"},
			"watch": &memoryv1.WatchRequest{},
		} {
			add("403", "scope "+sc+" "+op, req("mem.v1.scope."+sc+"."+op, body))
		}
	}
	for _, sc := range []string{"app.shop", "project.p1"} {
		add("403", "scope "+sc+" put (reader)", req("mem.v1.scope."+sc+".put", &memoryv1.PutEntryRequest{Key: "policy", Value: []byte("x")}))
		add("403", "scope "+sc+" delete", req("mem.v1.scope."+sc+".delete", &memoryv1.DeleteEntryRequest{Key: "policy"}))
		add("403", "scope "+sc+" rollback", req("mem.v1.scope."+sc+".rollback", &memoryv1.RollbackEntryRequest{Key: "policy", ToVersion: 1}))
		add("403", "scope "+sc+" configure", req("mem.v1.scope."+sc+".configure", &memoryv1.ConfigureScopeRequest{}))
	}
	add("403", "resolve on s-a2", req("mem.v1.scope.session.s-a2.resolve", &memoryv1.ResolveRequest{Key: "pref"}))
	add("403", "publish from s-a2", req("mem.v1.scope.session.s-a2.publish", &memoryv1.PublishRequest{Key: "note", Target: "user"}))
	add("403", "publish into project (admin only)", req("mem.v1.scope.session.s-a1.publish", &memoryv1.PublishRequest{Key: "n", Target: "project"}))
	add("403", "sessions.list user u2", req("mem.v1.sessions.list", &memoryv1.ListSessionsRequest{UserId: "u2"}))
	add("403", "sessions.list agent a2", req("mem.v1.sessions.list", &memoryv1.ListSessionsRequest{AgentId: "a2"}))
	add("403", "sessions.list everyone", req("mem.v1.sessions.list", &memoryv1.ListSessionsRequest{}))
	add("403", "data.get a2's data", req("mem.v1.data.get", &memoryv1.GetDataRequest{Id: v.dataID}))
	// Erasure (issue 19): a tenant never erases what it may not write, and
	// shared scopes only by an admin.
	erase := &memoryv1.EraseRequest{Reason: "attack"}
	add("403", "erase session s-a2", req("mem.v1.session.s-a2.erase", erase))
	add("403", "erase user u2", req("mem.v1.user.u2.erase", erase))
	add("no route", "erase agent a2", req("mem.v1.agent.a2.erase", erase))
	add("400", "erase agent a2 by the scope path", req("mem.v1.scope.agent.a2.erase", erase))
	for _, sc := range []string{"user.u2", "session.s-a2", "project.p1", "app.shop", "workflow.w1", "global.global", "swarm.x"} {
		add("403", "erase scope "+sc, req("mem.v1.scope."+sc+".erase", erase))
		add("403", "erase entry of "+sc, req("mem.v1.scope."+sc+".delete", &memoryv1.DeleteEntryRequest{Key: "policy", Erase: true}))
	}
	// Consolidation (issue 20): another user's session and scopes.
	add("403", "consolidate session s-a2", req("mem.v1.session.s-a2.consolidate", &memoryv1.ConsolidateRequest{}))
	add("403", "consolidate session s-a2 (dry run)", req("mem.v1.session.s-a2.consolidate", &memoryv1.ConsolidateRequest{DryRun: true}))
	for _, sc := range []string{"user.u2", "session.s-a2", "swarm.x"} {
		add("403", "conflicts of "+sc, req("mem.v1.scope."+sc+".conflicts", &memoryv1.ConflictsRequest{}))
		add("403", "settle in "+sc, req("mem.v1.scope."+sc+".settle", &memoryv1.SettleConflictRequest{CommandId: "atk1", Key: "k", Accept: true}))
	}
	// Namespace operations: export another user's namespace, import into
	// a scope the caller may not write, archive or restore in another
	// tenant. Shared scopes a1 is a member of (project p1) are an
	// admin's to manage as a whole.
	importBody := &memoryv1.ImportEntriesRequest{Keys: []*memoryv1.KeyHistory{{Key: "pref", Versions: []*memoryv1.Entry{{Key: "pref", Value: []byte("planted")}}}}}
	for op, body := range map[string]proto.Message{
		"export": &memoryv1.ExportEntriesRequest{}, "import": importBody,
		"archive": &memoryv1.ArchiveEntriesRequest{OlderThanDays: 1}, "restore": &memoryv1.RestoreEntryRequest{Key: "secret"},
	} {
		add("no route", "agent a2 "+op, req("mem.v1.agent.a2."+op, body))
		add("400", "scope agent a2 "+op, req("mem.v1.scope.agent.a2."+op, body))
		for _, sc := range []string{"user.u2", "session.s-a2", "swarm.x", "workflow.w2", "project.p1", "app.shop"} {
			add("403", "namespace "+op+" of "+sc, req("mem.v1.scope."+sc+"."+op, body))
		}
	}
	history := []*memoryv1.KeyHistory{{Key: "pref", Versions: []*memoryv1.Entry{{Key: "pref", Value: []byte("planted v1")}, {Key: "pref", Value: []byte("planted v2"), Tags: []string{"x"}}}}}
	add("403", "import a two-version history into user u2", req("mem.v1.scope.user.u2.import", &memoryv1.ImportEntriesRequest{Keys: history}))
	add("403", "import a two-version history into swarm x (not a writer there)", req("mem.v1.scope.swarm.x.import", &memoryv1.ImportEntriesRequest{Keys: history}))
	// An export file's messages, imported into u2's namespace: the sessions
	// would be u2's, which a1 may not create (nor write into s-a2, whose id
	// a file exported from u2 would keep).
	msgs := []replay.NamespaceSessionMsgs{{SessionID: "s-a1", Messages: []json.RawMessage{[]byte(`{"role":"ROLE_USER","content":"planted words"}`)}}}
	add("403", "import an export's session messages into user u2", func() outcome {
		_, err := replay.NamespaceImportMessages(ctx, a1.c, "user:u1", client.User("u2"), msgs, false)
		return outcome{code: client.Code(err), field: fmt.Sprint(err)}
	})
	add("403", "import session messages into user u2 under s-a2's id (a file of u2's)", func() outcome {
		_, err := replay.NamespaceImportMessages(ctx, a1.c, "user:u2", client.User("u2"), []replay.NamespaceSessionMsgs{{SessionID: "s-a2", Messages: msgs[0].Messages}}, false)
		return outcome{code: client.Code(err), field: fmt.Sprint(err)}
	})
	add("403", "import into user u2 (dry run)", req("mem.v1.scope.user.u2.import", &memoryv1.ImportEntriesRequest{Keys: importBody.Keys, DryRun: true}))
	add("403", "archive user u2 (dry run)", req("mem.v1.scope.user.u2.archive", &memoryv1.ArchiveEntriesRequest{OlderThanDays: 1, DryRun: true}))
	add("403", "export user u2 by prefix", req("mem.v1.scope.user.u2.export", &memoryv1.ExportEntriesRequest{Prefix: "pref"}))
	add("403", "settle in project.p1 (admin only)", req("mem.v1.scope.project.p1.settle", &memoryv1.SettleConflictRequest{CommandId: "atk1", Key: "k", Accept: true}))
	add("400", "erase with a 1 KiB reason", req("mem.v1.session.s-a1.erase", &memoryv1.EraseRequest{Reason: strings.Repeat("r", 1024)}))
	add("400", "erase with a bad command id", req("mem.v1.session.s-a1.erase", &memoryv1.EraseRequest{CommandId: "a.b"}))
	// Claiming another identity: in the body, or in a forged header the
	// server replaces with the real one.
	add("403", "create session claiming user u2", req("mem.v1.session.s-claim.create", &memoryv1.CreateSessionRequest{UserId: "u2"}))
	add("403", "create session claiming agent a2", req("mem.v1.session.s-claim2.create", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a2"}))
	add("403", "forged Nats-Request-Info (admin)", req("mem.v1.scope.app.shop.put", &memoryv1.PutEntryRequest{Key: "policy", Value: []byte("x")},
		"Nats-Request-Info", `{"acc":"ADMIN","user":"ops"}`))
	add("403", "forged Nats-Request-Info (a2)", req("mem.v1.session.s-a2.context", &memoryv1.ContextRequest{},
		"Nats-Request-Info", `{"acc":"a2","user":"agent-a2"}`))
	// The JetStream, KV and object-store APIs of the node's account: a1's
	// account has no JetStream and imports none of it.
	for _, s := range []string{
		"$JS.API.INFO", "$JS.API.STREAM.INFO.MEM", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES",
		"$JS.API.STREAM.MSG.GET.MEM", "$JS.API.DIRECT.GET.MEM", "$JS.API.DIRECT.GET.MEM.mem.ev.agent.a2",
		"$JS.API.CONSUMER.CREATE.MEM", "$JS.API.CONSUMER.CREATE.MEM.x.mem.ev.agent.a2", "$JS.API.CONSUMER.MSG.NEXT.MEM.x",
		"$JS.API.CONSUMER.DELETE.MEM.x", "$JS.API.CONSUMER.LIST.MEM", "$JS.API.CONSUMER.NAMES.MEM",
		"$JS.API.STREAM.PURGE.MEM", "$JS.API.STREAM.DELETE.MEM", "$JS.API.STREAM.DELETE.KV_MEM_SNAPSHOTS",
		"$JS.API.STREAM.PURGE.OBJ_MEM_DATA", "$KV.MEM_SNAPSHOTS.agent.a2", "$O.MEM_DATA.M.x", "mem.ev.agent.a2",
		// The nodes' own subjects (placement): a forwarded request is
		// identified by the headers the forwarding node copied, so only
		// nodes may reach them.
		"_AMN.fwd." + tn.n.NodeID() + ".mem.v1.session.s-a2.context", "_AMN.call." + tn.n.NodeID(),
		"$KV.MEM_PLACEMENT.p.0", "$JS.API.STREAM.PURGE.KV_MEM_PLACEMENT",
	} {
		s := s
		add("dropped", "js "+s, func() outcome {
			m, err := a1.nc.Request(s, []byte(`{}`), time.Second)
			switch {
			case err != nil:
				return outcome{none: err.Error()}
			case strings.Contains(string(m.Data), "JetStream not enabled for account"):
				// a1's own account answers: its JetStream is off.
				return outcome{none: "own account: JetStream not enabled"}
			}
			return outcome{field: string(m.Data)}
		})
	}
	// Reply-subject tricks: the server rewrites a cross-account reply to
	// _R_.…, so the answer lands in a1's own account, never in the node's
	// spaces or another tenant's inbox.
	for _, reply := range []string{"$JS.API.STREAM.PURGE.MEM", "$JS.API.STREAM.DELETE.MEM", "mem.ev.agent.a2",
		"mem.v1.agent.a2.delete", "$KV.MEM_SNAPSHOTS.agent.a2", "$O.MEM_DATA.M.x", "_INBOX.victim.1",
		"_AMN.call." + tn.n.NodeID(), "$KV.MEM_PLACEMENT.p.0"} {
		reply := reply
		add("contained", "reply subject "+reply, func() outcome {
			// a1 listens in its own account where the server delivers the
			// rewritten reply; a2 listens on its inbox of the same name.
			own, _ := a1.nc.SubscribeSync(reply)
			defer func() { _ = own.Unsubscribe() }()
			theirs, _ := tu.a2.nc.SubscribeSync(reply)
			defer func() { _ = theirs.Unsubscribe() }()
			_ = tu.a2.nc.Flush()
			body, _ := proto.Marshal(&memoryv1.GetEntryRequest{Key: "k"})
			if err := a1.nc.PublishMsg(&nats.Msg{Subject: "mem.v1.agent.a1.get", Reply: reply, Data: body}); err != nil {
				return outcome{none: err.Error()}
			}
			if m, err := theirs.NextMsg(300 * time.Millisecond); err == nil {
				return outcome{field: "reached a2: " + string(m.Data)}
			}
			if _, err := own.NextMsg(time.Second); err == nil {
				return outcome{none: "answered into a1's own account"}
			}
			return outcome{none: "no answer"}
		})
	}
	// Huge and deeply nested bodies.
	add("400|413", "huge append (7 MiB message)", req("mem.v1.session.s-a1.append", &memoryv1.AppendRequest{
		Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: strings.Repeat("x", 7<<20)}}}))
	add("400", "deeply nested JSON", func() outcome {
		return a1.doRaw("mem.v1.session.s-a1.append", []byte(`{"messages":[`+strings.Repeat(`{"metadata":`, 20000)+`{}`+strings.Repeat(`}`, 20000)+`]}`), "Content-Type", "application/json")
	})
	add("400", "deeply nested protobuf", func() outcome {
		return a1.doRaw("mem.v1.session.s-a1.append", nestedProto(20000))
	})

	// Finding 1 (issue 18): a session names only a user, project and app
	// its creator belongs to, and every read through a session is checked
	// like a direct read. The admin's session s-u1p2 names a1's user u1 but
	// project p2 and app crm, which a1 is not in (an admin may do that): a1
	// reaches the session, never p2's or crm's entries through it.
	for i, b := range []*memoryv1.CreateSessionRequest{
		{UserId: "u1", Project: "p2", App: "crm"}, {UserId: "u1", Project: "p2"}, {UserId: "u1", App: "crm"},
		{Project: "p2"}, {App: "crm"}, {UserId: "u1", Project: "p1", App: "crm"}, {UserId: "u1", Project: "p2", App: "shop"},
		{AgentId: "a1", Project: "p2"},
	} {
		add("403", fmt.Sprintf("create session naming user %q project %q app %q", b.GetUserId(), b.GetProject(), b.GetApp()),
			req(fmt.Sprintf("mem.v1.session.s-x%d.create", i), b))
	}
	add("403", "create session naming project p2 (JSON)", func() outcome {
		return a1.doRaw("mem.v1.session.s-xj.create", []byte(`{"user_id":"u1","project":"p2","app":"crm"}`), "Content-Type", "application/json")
	})
	ops := tu.ops.c
	for _, w := range []struct {
		sc        client.Scope
		key, text string
	}{{client.Project("p2"), "proj", "p2 launch codes"}, {client.App("crm"), "crmkey", "crm customer list"}, {client.Project("p2"), "pref", "p2 shadow pref"}} {
		if _, err := ops.Put(ctx, w.sc, &memoryv1.PutEntryRequest{Key: w.key, Value: []byte(w.text)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.CreateSession(ctx, "s-u1p2", &memoryv1.CreateSessionRequest{UserId: "u1", Project: "p2", App: "crm"}); err != nil {
		t.Fatal(err)
	}
	v.subjects = append(v.subjects, events.ScopeSubject("project", "p2"), events.ScopeSubject("app", "crm"))
	for _, key := range []string{"proj", "crmkey"} {
		add("hidden", "resolve "+key+" through admin's session naming p2/crm", func() outcome {
			rep, err := a1.c.Resolve(ctx, "s-u1p2", key)
			return hiddenOutcome(err, rep.GetFound(), rep.GetScope()+" "+string(rep.GetEntry().GetValue()))
		})
		add("hidden", "resolve "+key+" (JSON) through admin's session naming p2/crm", func() outcome {
			return hiddenRaw(a1, "mem.v1.scope.session.s-u1p2.resolve", []byte(`{"key":"`+key+`"}`), "project:p2", "app:crm")
		})
	}
	add("hidden", "context assembled for a1 in admin's session naming p2/crm", func() outcome {
		if _, err := a1.c.AppendMessages(ctx, "s-u1p2", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "what about proj and crmkey: codes, customers, pref"}); err != nil {
			return outcome{code: client.Code(err), field: err.Error()}
		}
		c, err := a1.c.Context(ctx, "s-u1p2")
		if err != nil {
			return outcome{code: client.Code(err), field: err.Error()}
		}
		j, _ := protojson.Marshal(c)
		leak := strings.Contains(string(j), "launch codes") || strings.Contains(string(j), "customer list") || strings.Contains(string(j), "shadow pref")
		return hiddenOutcome(nil, leak, string(j))
	})

	// Finding 2: a scope's configuration is for admins (an agent's own
	// scope: that agent). A member configuring a shared scope could set
	// max_entries 1 and evict every other member's entries.
	for _, sc := range []string{"workflow.w1", "global.global", "user.u1", "session.s-a1"} {
		sc := sc
		add("403", "configure "+sc+" max_entries 1 (member, not admin)", req("mem.v1.scope."+sc+".configure",
			&memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 1}}))
		add("403", "configure "+sc+" episodic ttl (JSON)", func() outcome {
			return a1.doRaw("mem.v1.scope."+sc+".configure", []byte(`{"config":{"episodic_ttl_seconds":1}}`), "Content-Type", "application/json")
		})
	}

	// No member's write evicts another member's entries: with max_entries 2
	// set by the admin on workflow w1 and a2's two entries in it, a1's put
	// is refused (413 max_entries) rather than evicting a2's; a1's own
	// entries are what its writes evict.
	w1 := client.Workflow("w1")
	add("413", "put into w1 at its admin-set max_entries, full of a2's entries", func() outcome {
		if _, err := ops.Configure(ctx, w1, &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 2}}); err != nil {
			return outcome{field: "setup: " + err.Error()}
		}
		for _, k := range []string{"a2-n1", "a2-n2"} {
			if _, err := tu.a2.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: k, Value: []byte("a2's note")}); err != nil {
				return outcome{field: "setup: " + err.Error()}
			}
		}
		_, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: "a1-n1", Value: []byte("x")})
		return outcome{code: client.Code(err), field: fmt.Sprint(err)}
	})
	add("ok", "a1's writes into w1 evict only a1's own entries", func() outcome {
		if _, err := tu.a2.c.DeleteEntry(ctx, w1, &memoryv1.DeleteEntryRequest{Key: "a2-n2"}); err != nil {
			return outcome{field: "setup: " + err.Error()}
		}
		for _, k := range []string{"a1-n1", "a1-n2", "a1-n3"} {
			if _, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: k, Value: []byte("x")}); err != nil {
				return outcome{code: client.Code(err), field: err.Error()}
			}
		}
		if _, err := tu.a2.c.GetEntry(ctx, w1, "a2-n1", 0); err != nil {
			return outcome{field: "a2's entry was evicted: " + err.Error()}
		}
		_, err := ops.Configure(ctx, w1, &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{}})
		return outcome{code: client.Code(err), field: fmt.Sprint(err)}
	})

	addHTTPAttacks(tn, v, add)
	addAgentTypeAttacks(t, tn, tu, add)
	addPatternLibraryAttacks(t, tu, add)

	// a2's watcher on its own session: it must never see an attack's change.
	before := tn.digest(t, v.subjects...)
	streamBefore := tn.streamState(t)
	t.Logf("%-60s %-10s %s", "case", "want", "got")
	for _, c := range cases {
		got := c.run()
		ok := refusedAs(got, c.want)
		t.Logf("%-60s %-10s %s", c.name, c.want, got)
		if !ok {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if after := tn.digest(t, v.subjects...); after != before {
			t.Fatalf("%s changed a victim's aggregate:\nbefore %s\nafter  %s", c.name, before, after)
		}
		start := time.Now()
		if _, err := tu.a2.c.GetEntry(ctx, client.Agent("a2"), "secret", 0); err != nil {
			t.Fatalf("after %s the victim is not served: %v", c.name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("after %s the victim waited %s", c.name, d)
		}
	}
	streamAfter := tn.streamState(t)
	t.Logf("log stream before: %s; after: %s", streamBefore, streamAfter)
	if !strings.HasPrefix(streamAfter, strings.Fields(streamBefore)[0]+" "+strings.Fields(streamBefore)[1]+" ") {
		t.Fatalf("the log's first sequence moved (purge): before %s, after %s", streamBefore, streamAfter)
	}
}

// hiddenOutcome is the outcome of a read through a session that must not
// show another scope's entry: "hidden" when it was refused (403, 404) or
// answered without it (leaked false).
func hiddenOutcome(err error, leaked bool, detail string) outcome {
	switch {
	case err != nil && (client.Code(err) == 403 || client.Code(err) == 404):
		return outcome{none: "hidden"}
	case err != nil:
		return outcome{code: client.Code(err), field: err.Error()}
	case leaked:
		return outcome{field: "leaked: " + detail}
	}
	return outcome{none: "hidden"}
}

// hiddenRaw sends a JSON body and reports "hidden" unless the answer holds
// one of secrets.
func hiddenRaw(u *tenant, subject string, body []byte, secrets ...string) outcome {
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set("Content-Type", "application/json")
	rep, err := u.nc.RequestMsg(msg, 3*time.Second)
	if err != nil {
		return outcome{none: err.Error()}
	}
	if c := rep.Header.Get("Nats-Service-Error-Code"); c == "403" || c == "404" {
		return outcome{none: "hidden"}
	} else if c != "" {
		return outcome{field: c + " " + rep.Header.Get("Nats-Service-Error")}
	}
	for _, sec := range secrets {
		if strings.Contains(string(rep.Data), sec) {
			return outcome{field: "leaked: " + string(rep.Data)}
		}
	}
	return outcome{none: "hidden"}
}

// doRaw sends data as is.
func (u *tenant) doRaw(subject string, data []byte, hdr ...string) outcome {
	msg := nats.NewMsg(subject)
	msg.Data = data
	for i := 0; i+1 < len(hdr); i += 2 {
		msg.Header.Add(hdr[i], hdr[i+1])
	}
	rep, err := u.nc.RequestMsg(msg, 3*time.Second)
	if err != nil {
		return outcome{none: err.Error()}
	}
	if c := rep.Header.Get("Nats-Service-Error-Code"); c != "" {
		var code int
		_, _ = fmt.Sscan(c, &code)
		return outcome{code: code, field: rep.Header.Get("Nats-Service-Error")}
	}
	return outcome{}
}

// nestedProto is an AppendRequest whose bytes nest a length-delimited field
// depth times (the decoder's recursion limit must refuse it).
func nestedProto(depth int) []byte {
	// Field 1 (messages), wire type 2, nested in itself: each level is a
	// MessageInput whose unknown field 1 nests again.
	inner := []byte{}
	for range depth {
		inner = append(append([]byte{0x0a}, protoVarint(len(inner))...), inner...)
	}
	return inner
}

func protoVarint(n int) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// TestTenantCommandIDsAreScopedToTheWriter: two members of workflow w1 use
// the same command id for different writes. Both are stored; each retry
// (the same request again) answers duplicate with its own write's
// sequence, and each writer's other request under that id is a 409.
func TestTenantCommandIDsAreScopedToTheWriter(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	w1 := client.Workflow("w1")
	r1, err := tu.a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{CommandId: "same-id", Key: "from-a1", Value: []byte("1")})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := tu.a2.c.Put(ctx, w1, &memoryv1.PutEntryRequest{CommandId: "same-id", Key: "from-a2", Value: []byte("2")})
	if err != nil {
		t.Fatal(err)
	}
	if r2.GetResult().GetDuplicate() || r2.GetResult().GetSeq() == r1.GetResult().GetSeq() {
		t.Fatalf("a2's write with a1's command id was suppressed: %v", r2.GetResult())
	}
	for _, c := range []struct {
		u          *tenant
		key, value string
		want       uint64
	}{{tu.a1, "from-a1", "1", r1.GetResult().GetSeq()}, {tu.a2, "from-a2", "2", r2.GetResult().GetSeq()}} {
		again, err := c.u.c.Put(ctx, w1, &memoryv1.PutEntryRequest{CommandId: "same-id", Key: c.key, Value: []byte(c.value)})
		if err != nil {
			t.Fatal(err)
		}
		if !again.GetResult().GetDuplicate() || again.GetResult().GetSeq() != c.want {
			t.Fatalf("%s retry = %v, want duplicate of seq %d", c.u.name, again.GetResult(), c.want)
		}
		// Before request digests, this was answered as a duplicate too.
		if _, err := c.u.c.Put(ctx, w1, &memoryv1.PutEntryRequest{CommandId: "same-id", Key: c.key, Value: []byte("x")}); client.Code(err) != 409 {
			t.Fatalf("%s: another value under its command id: %v, want 409", c.u.name, err)
		}
	}
	e, err := tu.a1.c.GetEntry(ctx, w1, "from-a2", 0)
	if err != nil || string(e.GetValue()) != "2" || e.GetUpdatedBy() != "a2" {
		t.Fatalf("a2's entry = %v %v, want value 2 by a2", e, err)
	}
}

// TestTenantFloodsHoldOnlyTheirOwnSlots: a1 floods searches that wait for a
// far-future min_seq, and watch polls; it gets 429 beyond its own limits
// (16 queries, 4 watches in examples/auth/tenants.json) while a2's
// searches and watches are served at once.
func TestTenantFloodsHoldOnlyTheirOwnSlots(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	for _, u := range []*tenant{tu.a1, tu.a2} {
		user := map[string]string{"agent-a1": "u1", "agent-a2": "u2"}[u.name]
		if _, err := u.c.CreateSession(ctx, "s-"+u.name, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[string]int{}
	)
	flood := func(n int, subject string, body proto.Message) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := tu.a1.do(subject, body)
				mu.Lock()
				results[subject+" "+o.String()]++
				mu.Unlock()
			}()
		}
	}
	flood(60, "mem.v1.session.s-agent-a1.search", &memoryv1.SearchRequest{Query: "x", MinSeq: 1 << 40})
	flood(20, "mem.v1.session.s-agent-a1.watch", &memoryv1.WatchRequest{WaitMs: 2500})
	time.Sleep(300 * time.Millisecond) // the flood holds a1's slots now
	start := time.Now()
	if _, err := tu.a2.c.Search(ctx, "s-agent-a2", &memoryv1.SearchRequest{Query: "x"}); err != nil {
		t.Fatalf("a2's search during a1's flood: %v", err)
	}
	rep := &memoryv1.WatchReply{}
	if o := tu.a2.do("mem.v1.session.s-agent-a2.watch", &memoryv1.WatchRequest{}); o.code != 0 || o.none != "" {
		t.Fatalf("a2's watch during a1's flood: %s", o)
	}
	_ = rep
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a2 waited %s during a1's flood", d)
	}
	wg.Wait()
	t.Logf("a1's flood: %v", results)
	if results["mem.v1.session.s-agent-a1.search 429 max_concurrent_queries: 16 in flight for this caller, the most it may hold; retry later"] == 0 {
		t.Fatalf("a1's search flood never hit its own limit: %v", results)
	}
	if results["mem.v1.session.s-agent-a1.watch 429 max_watches: 4 in flight for this caller, the most it may hold; retry later"] == 0 {
		t.Fatalf("a1's watch flood never hit its own limit: %v", results)
	}
}

// TestTenantErase: a writer erases its own user's session, scope entry and
// user; a reader does not erase even its own user's; only an admin erases
// a shared scope; every refusal leaves the data whole.
func TestTenantErase(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	a1, ops := tu.a1.c, tu.ops.c
	for _, id := range []string{"e-1", "e-2"} {
		if _, err := a1.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1", Project: "p1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.CreateSession(ctx, "e-u2", &memoryv1.CreateSessionRequest{UserId: "u2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Put(ctx, client.Project("p1"), &memoryv1.PutEntryRequest{Key: "policy", Value: []byte("keep")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tu.front2.c.EraseSession(ctx, "e-u2", ""); client.Code(err) != 403 {
		t.Errorf("reader front-u2 erasing its user's session: %v, want 403", err)
	}
	if _, err := tu.front2.c.EraseUser(ctx, "u2", ""); client.Code(err) != 403 {
		t.Errorf("reader front-u2 erasing its user: %v, want 403", err)
	}
	if _, err := a1.EraseScope(ctx, client.Project("p1"), ""); client.Code(err) != 403 {
		t.Errorf("writer a1 erasing project p1: %v, want 403", err)
	}
	if _, err := ops.GetEntry(ctx, client.Project("p1"), "policy", 0); err != nil {
		t.Fatalf("project entry after refused erases: %v", err)
	}
	if _, err := a1.EraseSession(ctx, "e-1", "done"); err != nil {
		t.Fatalf("a1 erasing its user's session: %v", err)
	}
	if _, err := a1.EraseEntry(ctx, client.User("u1"), "k", ""); err != nil {
		t.Fatalf("a1 erasing its user's entry: %v", err)
	}
	if rc, err := a1.EraseUser(ctx, "u1", "account closed"); err != nil || len(rc.GetSessions()) != 1 {
		t.Fatalf("a1 erasing user u1: %v %v", rc, err)
	}
	if _, err := ops.Get(ctx, "e-u2"); err != nil {
		t.Fatalf("u2's session after erasing u1: %v", err)
	}
	if _, err := ops.EraseScope(ctx, client.Project("p1"), "retired"); err != nil {
		t.Fatalf("admin erasing project p1: %v", err)
	}
	if _, err := ops.GetEntry(ctx, client.Project("p1"), "policy", 0); client.Code(err) != 404 {
		t.Fatalf("project entry after the admin's erase: %v, want 404", err)
	}
}
