package node_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// addPatternLibraryAttacks are the attack rows of pattern libraries in app
// scopes: a1 (a member of app shop, not of crm) neither plants a library
// in its app's scope (an app is written by admins), nor names crm as its
// session's app, nor gets crm's library of the same name into the ROM of
// its own shop session, nor into a session of no app. The admin's library
// is written into app:crm, already a victim subject of the suite.
func addPatternLibraryAttacks(t *testing.T, tu tenants, add func(want, name string, run func() outcome)) {
	a1, ops := tu.a1, tu.ops.c
	ctx := context.Background()
	if _, err := ops.Put(ctx, client.App("crm"), &memoryv1.PutEntryRequest{Key: node.PatternKeyPrefix + "sql/01", Value: []byte("crm secret pattern")}); err != nil {
		t.Fatal(err)
	}
	add("403", "plant a pattern library in app:shop (not admin)", func() outcome {
		return a1.do("mem.v1.scope.app.shop.put", &memoryv1.PutEntryRequest{Key: node.PatternKeyPrefix + "sql/01", Value: []byte("planted")})
	})
	add("403", "create session of app crm naming library sql (not a member)", func() outcome {
		return a1.do("mem.v1.session.s-lib-crm.create", &memoryv1.CreateSessionRequest{UserId: "u1", App: "crm", PatternLibraries: []string{"sql"}})
	})
	for _, s := range []struct{ id, app string }{{"s-lib-shop", "shop"}, {"s-lib-none", ""}} {
		add("hidden", "ROM of a1's session (app "+map[bool]string{true: s.app, false: "none"}[s.app != ""]+") naming library sql held by app:crm", func() outcome {
			if _, err := a1.c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: "u1", App: s.app, SystemPrompt: "sys", PatternLibraries: []string{"sql"}}); err != nil {
				return outcome{code: client.Code(err), field: err.Error()}
			}
			if _, err := a1.c.AppendMessages(ctx, s.id, userMsg("which sql pattern applies?")); err != nil {
				return outcome{code: client.Code(err), field: err.Error()}
			}
			k, err := a1.c.Kernel(ctx, s.id, nil)
			if err != nil {
				return outcome{code: client.Code(err), field: err.Error()}
			}
			j, _ := protojson.Marshal(k)
			return hiddenOutcome(nil, strings.Contains(string(j), "crm secret") || strings.Contains(string(j), "app:crm"), string(j))
		})
	}
}
