package inspector

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestMemorySource: a memory item's source names its scope, key, version
// and tier, and links to the key's page, whether the sections name the
// key by digest (as written since) or by the key itself (as written
// before); an item whose key could not be read (erased) is named by a
// digest prefix, with no link and no key.
func TestMemorySource(t *testing.T) {
	byDigest := &memoryv1.MemoryItem{Scope: "agent:solo", KeySha256: segmented.KeySum("episode/user/tried/the_router"), Version: 2, Tier: "task"}
	legacy := &memoryv1.MemoryItem{Scope: "global", Key: "tone", Version: 1, Tier: "global"}
	erased := &memoryv1.MemoryItem{Scope: "user:u1", KeySha256: segmented.KeySum("fact/user/wombat"), Version: 1, Tier: "user"}
	src := newSources(&memoryv1.SessionSnapshot{Assembled: &memoryv1.Assembled{Memory: []*memoryv1.MemoryItem{byDigest, legacy, erased}}})
	for _, c := range []struct{ id, source, link string }{
		{"memory:agent:solo/episode/user/tried/the_router", "scope agent:solo · key episode/user/tried/the_router · version 2 · tier task",
			"/ui/scopes?kind=agent&id=solo&key=episode/user/tried/the_router"},
		{"memory:global/tone", "scope global · key tone · version 1 · tier global", "/ui/scopes?kind=global&id=global&key=tone"},
		{segmented.MemoryID(erased, ""), "scope user:u1 · key " + segmented.KeyName(erased, "") + " · version 1 · tier user", ""},
	} {
		source, link := src.of(&memoryv1.ContextMessage{Layer: segmented.LayerMemory, Id: c.id})
		if source != c.source || link != c.link {
			t.Errorf("%s: source %q, link %q; want %q, %q", c.id, source, link, c.source, c.link)
		}
		if strings.Contains(source, "wombat") {
			t.Errorf("%s: the source names the erased key: %q", c.id, source)
		}
	}
	if source, _ := src.of(&memoryv1.ContextMessage{Layer: segmented.LayerMemory, Id: "memory:agent:solo/other"}); source != "memory:agent:solo/other" {
		t.Errorf("an item the sections do not hold: source %q, want its id", source)
	}
}
