package consolidation

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestReview: a proposal is listed beside the key's current value;
// accepting it makes it the key's next version and deletes the proposal;
// a retry of the settlement writes nothing and answers the key as it is;
// a key with no proposal is not found.
func TestReview(t *testing.T) {
	ctx := context.Background()
	sc, u := newMemScopes(), Scope{Kind: sharedmem.KindUser, ID: "u1"}
	if _, err := sc.Put(ctx, u, &memoryv1.PutEntryRequest{CommandId: "c1", Key: "fact/city", Value: []byte("Paris")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Put(ctx, u, &memoryv1.PutEntryRequest{CommandId: "c2", Key: ReviewPrefix + "fact/city", Value: []byte("Lyon"),
		Metadata: map[string]string{MetaProposedFor: "fact/city"}}); err != nil {
		t.Fatal(err)
	}
	cs, err := Conflicts(ctx, sc, u, 0)
	if err != nil || len(cs.GetConflicts()) != 1 {
		t.Fatalf("conflicts %v, %v", cs, err)
	}
	if c := cs.GetConflicts()[0]; c.GetKey() != "fact/city" || string(c.GetCurrent().GetValue()) != "Paris" || string(c.GetProposed().GetValue()) != "Lyon" {
		t.Fatalf("conflict %v", c)
	}
	req := &memoryv1.SettleConflictRequest{CommandId: "s1", Key: "fact/city", Accept: true}
	res, err := Settle(ctx, sc, u, req, "p1")
	if err != nil || string(res.GetEntry().GetValue()) != "Lyon" || res.GetEntry().GetVersion() != 2 {
		t.Fatalf("settle %v, %v", res, err)
	}
	if _, ok := res.GetEntry().GetMetadata()[MetaProposedFor]; ok {
		t.Error("the accepted value still says it was proposed")
	}
	if p, _ := sc.Get(ctx, u, ReviewPrefix+"fact/city"); !p.GetDeleted() {
		t.Error("the proposal is left")
	}
	sc.writesOf()
	again, err := Settle(ctx, sc, u, req, "p1")
	if err != nil || string(again.GetEntry().GetValue()) != "Lyon" || again.GetEntry().GetVersion() != 2 {
		t.Fatalf("retry %v, %v", again, err)
	}
	if w := sc.writesOf(); len(w) != 0 {
		t.Fatalf("the retry wrote %v", w)
	}
	if _, err := Settle(ctx, sc, u, &memoryv1.SettleConflictRequest{CommandId: "s2", Key: "fact/none"}, "p1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no proposal: %v", err)
	}
}
