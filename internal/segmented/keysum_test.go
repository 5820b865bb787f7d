package segmented

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSectionsNameKeysByDigest: the memory section's items record their
// key by digest, so neither the ContextAssembled event nor the session's
// context before hydration holds the key (a key may be the user's words);
// Hydrate reads the key back by its digest, then the text, and the
// context reads as if the key were recorded; a key the scope no longer
// holds leaves the item out, its tokens with it.
func TestSectionsNameKeysByDigest(t *testing.T) {
	const key = "episode/user/tried/restarting_the_wombat_router"
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 4500, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, MemoryPct: 10}})
	c := &Candidates{Memory: []*memoryv1.MemoryItem{
		{Scope: "agent:a1", Key: key, Version: 1, Tier: TierTask, Text: "I tried restarting the router; it did not help."},
		{Scope: "user:u1", Key: "diet", Version: 3, Tier: TierUser, Text: "vegetarian"},
	}}
	ev := assembledEvent(appendWith(t, s, c, user("Should I try restarting it once more?")))
	if ev == nil || len(ev.GetSections().GetMemory()) != 2 {
		t.Fatalf("sections %v, want both candidates", ev)
	}
	keys := map[string]string{hex.EncodeToString(KeySum(key)): key, hex.EncodeToString(KeySum("diet")): "diet"}
	for _, m := range ev.GetSections().GetMemory() {
		if m.GetKey() != "" || keys[hex.EncodeToString(m.GetKeySha256())] == "" {
			t.Errorf("item %v: want no key and the digest of a candidate's", m)
		}
	}
	if b, _ := proto.Marshal(ev); bytes.Contains(b, []byte("wombat")) {
		t.Error("the ContextAssembled event holds the key")
	}
	cx := s.Context()
	if b, _ := proto.Marshal(cx); bytes.Contains(b, []byte("wombat")) {
		t.Error("the context before hydration holds the key")
	}

	values := map[string]string{key: c.Memory[0].GetText(), "diet": "vegetarian"}
	entry := func(scope, k string, version uint64) (string, bool) { v, ok := values[k]; return v, ok }
	keyOf := func(scope string, sum []byte) (string, bool) { k, ok := keys[hex.EncodeToString(sum)]; return k, ok }
	got := Hydrate(cx, Sources{Entry: entry, Key: keyOf})
	var tokens uint32
	found := false
	for _, m := range got.GetMessages() {
		if m.GetLayer() != LayerMemory {
			continue
		}
		tokens += m.GetTokens()
		if m.GetId() == "memory:agent:a1/"+key {
			found = true
			if want := "Memory agent:a1 " + key + " (v1): I tried restarting the router; it did not help."; m.GetContent() != want {
				t.Errorf("hydrated item reads %q, want %q", m.GetContent(), want)
			}
		}
	}
	if !found || tokens != got.GetLayers().GetMemory() || got.GetLayers().GetMemory() != cx.GetLayers().GetMemory() {
		t.Errorf("hydrated: item found %v, memory tokens listed %d, layer %d (before %d)", found, tokens, got.GetLayers().GetMemory(), cx.GetLayers().GetMemory())
	}

	// The key erased: the scope no longer finds its digest.
	delete(keys, hex.EncodeToString(KeySum(key)))
	gone := Hydrate(cx, Sources{Entry: entry, Key: keyOf})
	for _, m := range gone.GetMessages() {
		if strings.Contains(m.GetId(), "wombat") || strings.Contains(m.GetContent(), "wombat") || strings.HasPrefix(m.GetId(), "memory:agent:a1/") {
			t.Errorf("after the erase: %s %q", m.GetId(), m.GetContent())
		}
	}
	if gone.GetLayers().GetMemory() >= cx.GetLayers().GetMemory() || gone.GetUsage().GetUsed() != cx.GetUsage().GetUsed()-(cx.GetLayers().GetMemory()-gone.GetLayers().GetMemory()) {
		t.Errorf("after the erase: memory %d, used %d (before %d, %d): want the item's tokens gone from both",
			gone.GetLayers().GetMemory(), gone.GetUsage().GetUsed(), cx.GetLayers().GetMemory(), cx.GetUsage().GetUsed())
	}
	if none := Hydrate(cx, Sources{Entry: entry}); none.GetLayers().GetMemory() != 0 {
		t.Errorf("without a key source: memory %d tokens, want the items left out", none.GetLayers().GetMemory())
	}
}

// TestSameSectionsByDigest: sections recorded before (items naming their
// key) and the same sections chosen now (by digest) are the same, so the
// first append after an upgrade writes no event for them; another key, or
// another field, is not.
func TestSameSectionsByDigest(t *testing.T) {
	now := &memoryv1.Assembled{Planned: true, Memory: []*memoryv1.MemoryItem{
		{Scope: "user:u1", KeySha256: KeySum("diet"), Version: 3, Tokens: 9, Tier: TierUser, TextBytes: 40},
	}}
	before := proto.CloneOf(now)
	before.Memory[0].Key, before.Memory[0].KeySha256 = "diet", nil
	if !sameSections(now, before) || !sameSections(before, now) {
		t.Error("the same item by key and by digest: not the same sections")
	}
	other := proto.CloneOf(before)
	other.Memory[0].Key = "diets"
	if sameSections(now, other) {
		t.Error("another key: the same sections")
	}
	other = proto.CloneOf(before)
	other.Memory[0].Tokens++
	if sameSections(now, other) {
		t.Error("other tokens: the same sections")
	}
}

// TestHydrateAtNamesErasedKeysByDigest: time travel shows an item whose
// key the log no longer holds as erased (or not kept) under a prefix of
// its digest, never a key; an item written before still shows its key;
// a key read back shows the text.
func TestHydrateAtNamesErasedKeysByDigest(t *testing.T) {
	byDigest := &memoryv1.MemoryItem{Scope: "agent:a1", KeySha256: KeySum("episode/wombat"), Version: 1, Tokens: 7, TextBytes: 100}
	legacy := &memoryv1.MemoryItem{Scope: "agent:a1", Key: "tone", Version: 2, Tokens: 5, TextBytes: 100}
	cx := &memoryv1.ContextReply{Layers: &memoryv1.LayerTokens{Memory: 12}, Usage: &memoryv1.Usage{Used: 12}, Messages: []*memoryv1.ContextMessage{
		{Layer: LayerMemory, Id: MemoryID(byDigest, ""), Tokens: 7, Memory: byDigest},
		{Layer: LayerMemory, Id: MemoryID(legacy, ""), Tokens: 5, Memory: legacy},
	}}
	digestName := "#" + hex.EncodeToString(KeySum("episode/wombat"))[:12]
	for _, c := range []struct {
		state      PastEntry
		key        string
		id, prefix string
	}{
		{PastErased, "", "memory:agent:a1/" + digestName, "[erased] Memory agent:a1 " + digestName + " (v1)"},
		{PastNotKept, "", "memory:agent:a1/" + digestName, "[not kept] Memory agent:a1 " + digestName + " (v1)"},
		{PastText, "episode/wombat", "memory:agent:a1/episode/wombat", "Memory agent:a1 episode/wombat (v1): the text"},
		{PastText, "", "memory:agent:a1/" + digestName, "[not kept]"}, // a text without its key is not shown
	} {
		got := HydrateAt(cx, func(ref *memoryv1.MemoryItem) (string, string, PastEntry) {
			if ref.GetKey() != "" {
				return "", "", PastErased
			}
			return c.key, "the text", c.state
		}, nil)
		m, l := got.GetMessages()[0], got.GetMessages()[1]
		if m.GetId() != c.id || !strings.HasPrefix(m.GetContent(), c.prefix) || m.GetTokens() != 7 {
			t.Errorf("state %d, key %q: %s %q (%d tokens), want %s %q…", c.state, c.key, m.GetId(), m.GetContent(), m.GetTokens(), c.id, c.prefix)
		}
		if c.key == "" && strings.Contains(m.GetContent(), "wombat") {
			t.Errorf("state %d: %q names the key", c.state, m.GetContent())
		}
		if l.GetId() != "memory:agent:a1/tone" || !strings.HasPrefix(l.GetContent(), "[erased] Memory agent:a1 tone (v2)") {
			t.Errorf("the item written before: %s %q, want its key", l.GetId(), l.GetContent())
		}
		if got.GetLayers().GetMemory() != 12 {
			t.Errorf("state %d: memory %d tokens, want 12 (every item kept)", c.state, got.GetLayers().GetMemory())
		}
	}
}
