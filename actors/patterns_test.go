package actors

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// fakeLibraries is a pattern-library source whose content the test
// changes.
type fakeLibraries struct {
	mu    sync.Mutex
	libs  map[string][]string
	reads int
}

func (f *fakeLibraries) set(name string, patterns ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.libs[name] = patterns
}

func (f *fakeLibraries) source(_ string, names []string) ([]segmented.Library, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := make([]segmented.Library, len(names))
	for i, n := range names {
		out[i] = segmented.Library{Name: n, Patterns: f.libs[n]}
	}
	return out, nil
}

// TestPatternLibraryTurnBoundary: a library update reaches a session at its
// next user message, never within a turn in flight (a tool call pending);
// a session not using the library keeps its ROM; the state rebuilt from
// the log (with and without the snapshot) equals the live state byte for
// byte after the update, although the library changed again since: replay
// never reads a library.
func TestPatternLibraryTurnBoundary(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, func(c *Config) { c.SnapshotEvery = 3 })
	libs := &fakeLibraries{libs: map[string][]string{}}
	h.dir.deps.Libraries = libs.source
	libs.set("sql", "Use bind parameters.", "Name columns explicitly.")
	h.must(t, "lib", &memoryv1.CreateSessionRequest{SystemPrompt: "You are a DBA.", Patterns: []string{"Be terse."}, PatternLibraries: []string{"sql"}})
	h.must(t, "plain", &memoryv1.CreateSessionRequest{SystemPrompt: "You are a DBA.", Patterns: []string{"Be terse."}})
	rom := func(id string) *memoryv1.Rom {
		t.Helper()
		return h.must(t, id, &memoryv1.KernelRequest{}).(*memoryv1.KernelReply).GetRom()
	}
	if r := rom("lib"); r.GetVersion() != 1 || strings.Join(r.GetPatterns(), "|") != "Be terse.|Use bind parameters.|Name columns explicitly." {
		t.Fatalf("created ROM %v", r)
	}
	for _, id := range []string{"lib", "plain"} {
		h.must(t, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("list the slow queries")}})
		h.must(t, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT,
			ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "pg_stat", Arguments: "{}"}}}}})
	}
	libs.set("sql", "Use bind parameters always.", "Name columns explicitly.")
	h.must(t, "lib", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "q1 12s"}}})
	if r := rom("lib"); r.GetVersion() != 1 || strings.Contains(strings.Join(r.GetPatterns(), "|"), "always") {
		t.Fatalf("the ROM changed within the turn: %v", r)
	}
	h.must(t, "lib", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("and the fix?")}})
	r := rom("lib")
	if r.GetVersion() != 2 || strings.Join(r.GetPatterns(), "|") != "Be terse.|Use bind parameters always.|Name columns explicitly." {
		t.Fatalf("the next turn's ROM %v, want version 2 with the library's update", r)
	}
	if r.GetLibraries()[0].GetDigest() != segmented.LibraryDigest([]string{"Use bind parameters always.", "Name columns explicitly."}) {
		t.Fatalf("ROM records %v", r.GetLibraries())
	}
	cx := h.must(t, "lib", &memoryv1.ContextRequest{}).(*memoryv1.ContextReply)
	if cx.GetRomVersion() != 2 || !strings.Contains(cx.GetMessages()[0].GetContent(), "always") {
		t.Fatalf("context ROM v%d: %q", cx.GetRomVersion(), cx.GetMessages()[0].GetContent())
	}
	h.must(t, "plain", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "q1 12s"}}})
	h.must(t, "plain", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("and the fix?")}})
	if r := rom("plain"); r.GetVersion() != 1 {
		t.Fatalf("a session without the library changed its ROM: %v", r)
	}
	// A ROM update by the client keeps the libraries.
	h.must(t, "lib", &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{SystemPrompt: "You are a senior DBA.", Patterns: []string{"Be brief."}}}})
	pending := h.must(t, "lib", &memoryv1.KernelRequest{}).(*memoryv1.KernelReply).GetPendingRom()
	if strings.Join(pending.GetPatterns(), "|") != "Be brief.|Use bind parameters always.|Name columns explicitly." || len(pending.GetLibraries()) != 1 {
		t.Fatalf("update_rom dropped the libraries: %v", pending)
	}

	libs.set("sql", "Something else entirely.")
	reads := libs.reads
	live := h.live(t, "lib")
	for _, snap := range []bool{false, true} {
		if got := snapBytes(t, h.fromLog(t, "lib", snap).Snapshot()); string(got) != string(live) || !proto.Equal(mustSnap(t, got), mustSnap(t, live)) {
			t.Fatalf("state from the log (snapshot %v) differs from the live state across a library update", snap)
		}
	}
	if libs.reads != reads {
		t.Fatalf("replay read the library %d times", libs.reads-reads)
	}
}
