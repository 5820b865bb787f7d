package api_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// isoKind is one row of the isolation matrix: a scope kind and how to build
// its two scopes A and B for an operation. Every scope kind has many ids
// but global, whose one scope is checked against a scope of another kind
// with the same id string ("global").
type isoKind struct {
	name string
	pair func(op string) (a, b client.Scope)
}

func isoKinds() []isoKind {
	byID := func(kind string, mk func(string) client.Scope) isoKind {
		return isoKind{kind, func(op string) (client.Scope, client.Scope) {
			return mk("iso-" + op + "-a"), mk("iso-" + op + "-b")
		}}
	}
	return []isoKind{
		byID("agent", client.Agent),
		{"global", func(string) (client.Scope, client.Scope) { return client.Global(), client.Workflow("global") }},
		byID("workflow", client.Workflow),
		byID("swarm", client.Swarm),
		byID("debate", client.Debate),
		byID("session", client.SessionScope),
		byID("user", client.User),
		byID("app", client.App),
		byID("project", client.Project),
		byID("agent_type", client.AgentType),
	}
}

// isoEnv is what one kind×op subtest works with.
type isoEnv struct {
	t    *testing.T
	ctx  context.Context
	c    *client.Client
	a, b client.Scope
	// key is written in both scopes; aVal/bVal are the values each holds.
	key        string
	aVal, bVal string
}

func (e *isoEnv) put(s client.Scope, value string, expected *int64) *memoryv1.EntryReply {
	e.t.Helper()
	rep, err := e.c.Put(e.ctx, s, &memoryv1.PutEntryRequest{Key: e.key, Value: []byte(value), ExpectedVersion: expected})
	if err != nil {
		e.t.Fatalf("put %s in %v: %v", e.key, s, err)
	}
	return rep
}

// checkA fails unless A's key is exactly as A wrote it: current value aVal
// at version want, with want versions in its history.
func (e *isoEnv) checkA(want uint64) {
	e.t.Helper()
	got, err := e.c.GetEntry(e.ctx, e.a, e.key, 0)
	if err != nil {
		e.t.Fatalf("A (%v) lost %s: %v", e.a, e.key, err)
	}
	if string(got.GetValue()) != e.aVal || got.GetVersion() != want || got.GetDeleted() {
		e.t.Fatalf("A (%v) %s = %q v%d deleted=%v, want %q v%d", e.a, e.key, got.GetValue(), got.GetVersion(), got.GetDeleted(), e.aVal, want)
	}
	hist, err := e.c.History(e.ctx, e.a, e.key)
	if err != nil || uint64(len(hist)) != want {
		e.t.Fatalf("A (%v) history of %s: %d versions (%v), want %d", e.a, e.key, len(hist), err, want)
	}
	for _, v := range hist {
		if v.GetUpdatedBy() != "" && e.a.Kind == "agent" && v.GetUpdatedBy() != e.a.ID {
			e.t.Errorf("A (%v) version %d written by %q", e.a, v.GetVersion(), v.GetUpdatedBy())
		}
	}
}

// noA fails if any entry shows A's value.
func (e *isoEnv) noA(where string, entries ...*memoryv1.Entry) {
	e.t.Helper()
	for _, en := range entries {
		if bytes.Contains(en.GetValue(), []byte(e.aVal)) {
			e.t.Fatalf("%s under B (%v) shows A's value: %v", where, e.b, en)
		}
	}
}

func withKey(entries []*memoryv1.Entry, key string) []*memoryv1.Entry {
	var out []*memoryv1.Entry
	for _, e := range entries {
		if e.GetKey() == key {
			out = append(out, e)
		}
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	if client.Code(err) != code {
		t.Fatalf("%s: %v, want code %d", what, err, code)
	}
}

var isoOps = []struct {
	op  string
	run func(e *isoEnv)
}{
	{"put", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		e.put(e.a, e.aVal, nil)
		// B has no such key: "must not exist" succeeds and starts at version 1.
		zero := int64(0)
		if v := e.put(e.b, e.bVal, &zero).GetEntry().GetVersion(); v != 1 {
			e.t.Fatalf("B's first version is %d, want 1", v)
		}
		// A compare-and-set against A's version (2) fails in B (current 1).
		two := int64(2)
		_, err := e.c.Put(e.ctx, e.b, &memoryv1.PutEntryRequest{Key: e.key, Value: []byte("x"), ExpectedVersion: &two})
		wantCode(e.t, "CAS in B with A's version", err, 409)
		e.checkA(2)
	}},
	{"get", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		_, err := e.c.GetEntry(e.ctx, e.b, e.key, 0)
		wantCode(e.t, "get current under B", err, 404)
		_, err = e.c.GetEntry(e.ctx, e.b, e.key, 1)
		wantCode(e.t, "get version 1 under B", err, 404)
		e.put(e.b, e.bVal, nil)
		got, err := e.c.GetEntry(e.ctx, e.b, e.key, 0)
		if err != nil || string(got.GetValue()) != e.bVal {
			e.t.Fatalf("get under B: %v %v", err, got)
		}
		e.checkA(1)
	}},
	{"list", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		// The global row's B is one scope for every op: look at this op's key.
		for _, req := range []*memoryv1.ListEntriesRequest{{}, {IncludeDeleted: true}, {Prefix: e.key}} {
			l, err := e.c.ListEntries(e.ctx, e.b, req)
			if err != nil {
				e.t.Fatal(err)
			}
			e.noA("list", l.GetEntries()...)
			if ours := withKey(l.GetEntries(), e.key); len(ours) != 0 {
				e.t.Fatalf("list %v under B before B wrote %s: %v", req, e.key, ours)
			}
		}
		e.put(e.b, e.bVal, nil)
		l, err := e.c.ListEntries(e.ctx, e.b, &memoryv1.ListEntriesRequest{IncludeDeleted: true})
		if err != nil {
			e.t.Fatal(err)
		}
		e.noA("list", l.GetEntries()...)
		if ours := withKey(l.GetEntries(), e.key); len(ours) != 1 || string(ours[0].GetValue()) != e.bVal {
			e.t.Fatalf("list under B: %v", ours)
		}
	}},
	{"history", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		e.put(e.a, e.aVal, nil)
		_, err := e.c.History(e.ctx, e.b, e.key)
		wantCode(e.t, "history under B", err, 404)
		e.put(e.b, e.bVal, nil)
		h, err := e.c.History(e.ctx, e.b, e.key)
		if err != nil || len(h) != 1 || string(h[0].GetValue()) != e.bVal {
			e.t.Fatalf("history under B: %v %v", err, h)
		}
		e.noA("history", h...)
		e.checkA(2)
	}},
	{"search", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		e.put(e.b, e.bVal, nil)
		word := strings.Fields(e.aVal)[0]
		rb, err := e.c.SearchEntries(e.ctx, e.b, &memoryv1.SearchEntriesRequest{Query: word})
		if err != nil {
			e.t.Fatalf("search under B: %v", err)
		}
		for _, h := range rb.GetHits() {
			e.noA("search", h.GetEntry())
		}
		// Positive control: the same query finds A's entry under A, so an
		// empty answer under B is isolation, not a search that finds nothing.
		ra, err := e.c.SearchEntries(e.ctx, e.a, &memoryv1.SearchEntriesRequest{Query: word})
		if err != nil {
			e.t.Fatalf("search under A: %v", err)
		}
		if len(ra.GetHits()) == 0 || string(ra.GetHits()[0].GetEntry().GetValue()) != e.aVal {
			e.t.Fatalf("search %q under A (%v) does not find A's entry: %v", word, e.a, ra.GetHits())
		}
		// And B's own entry is found under B.
		rb, err = e.c.SearchEntries(e.ctx, e.b, &memoryv1.SearchEntriesRequest{Query: strings.Fields(e.bVal)[0]})
		if err != nil || len(rb.GetHits()) == 0 {
			e.t.Fatalf("search under B for B's entry: %v %v", err, rb.GetHits())
		}
		for _, h := range rb.GetHits() {
			e.noA("search", h.GetEntry())
		}
	}},
	{"watch", func(e *isoEnv) {
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		w, err := e.c.Watch(ctx, e.b.WatchFilter(), 0)
		if err != nil {
			cancel()
			e.t.Fatal(err)
		}
		defer func() {
			cancel()
			for range w.Changes() { // wait for the watch to stop
			}
		}()
		e.put(e.a, e.aVal, nil)
		e.put(e.a, e.aVal, nil)
		marker := e.put(e.b, e.bVal, nil).GetResult().GetSeq()
		for {
			var ch client.Change
			select {
			case ch = <-w.Changes():
			case <-ctx.Done():
				e.t.Fatalf("watch on %s: B's change at seq %d never came (err %v)", e.b.WatchFilter(), marker, w.Err())
			}
			if ch.Subject != e.b.WatchFilter() {
				e.t.Fatalf("watch on B delivered %s (seq %d)", ch.Subject, ch.Seq)
			}
			for _, ev := range ch.Events {
				if ec, ok := ev.(*memoryv1.EntryChanged); ok {
					e.noA("watch", ec.GetEntry())
				}
			}
			if ch.Seq >= marker {
				return
			}
		}
	}},
	{"delete", func(e *isoEnv) {
		e.put(e.a, e.aVal, nil)
		_, err := e.c.DeleteEntry(e.ctx, e.b, &memoryv1.DeleteEntryRequest{Key: e.key})
		wantCode(e.t, "delete under B before B wrote", err, 404)
		one := int64(1)
		_, err = e.c.DeleteEntry(e.ctx, e.b, &memoryv1.DeleteEntryRequest{Key: e.key, ExpectedVersion: &one})
		if err == nil {
			e.t.Fatal("delete under B with A's version succeeded")
		}
		e.put(e.b, e.bVal, nil)
		if _, err := e.c.DeleteEntry(e.ctx, e.b, &memoryv1.DeleteEntryRequest{Key: e.key}); err != nil {
			e.t.Fatalf("delete under B: %v", err)
		}
		e.checkA(1)
	}},
	{"rollback", func(e *isoEnv) {
		e.put(e.a, "old "+e.aVal, nil)
		e.put(e.a, e.aVal, nil)
		_, err := e.c.Rollback(e.ctx, e.b, &memoryv1.RollbackEntryRequest{Key: e.key, ToVersion: 1})
		wantCode(e.t, "rollback under B before B wrote", err, 404)
		e.put(e.b, e.bVal, nil)
		_, err = e.c.Rollback(e.ctx, e.b, &memoryv1.RollbackEntryRequest{Key: e.key, ToVersion: 2})
		wantCode(e.t, "rollback under B to A's version 2", err, 404)
		rep, err := e.c.Rollback(e.ctx, e.b, &memoryv1.RollbackEntryRequest{Key: e.key, ToVersion: 1})
		if err != nil || string(rep.GetEntry().GetValue()) != e.bVal || rep.GetEntry().GetVersion() != 2 {
			e.t.Fatalf("rollback under B to its own version 1: %v %v", err, rep.GetEntry())
		}
		e.checkA(2)
	}},
}

// TestScopeIsolation is the isolation matrix: for every scope kind, two
// scopes A and B, and every operation, nothing written under A is visible
// or changeable under B. Both scopes use the same key.
func TestScopeIsolation(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	for _, k := range isoKinds() {
		for _, op := range isoOps {
			t.Run(k.name+"/"+op.op, func(t *testing.T) {
				a, b := k.pair(op.op)
				e := &isoEnv{
					t: t, ctx: context.Background(), c: c, a: a, b: b,
					key:  "shared-key-" + op.op,
					aVal: fmt.Sprintf("quokka%s secret of %v", op.op, a),
					bVal: fmt.Sprintf("wombat%s note of %v", op.op, b),
				}
				op.run(e)
			})
		}
	}
}
