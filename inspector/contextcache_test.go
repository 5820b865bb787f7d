package inspector_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestContextPageKeepsNoContext: the context page asks for the whole
// context at every load (if_version 0), unchanged session or not: the
// inspector keeps no context between pages. It kept the last one of each
// of 64 sessions (the client's cache), and the soak showed them: 8 MB of
// contexts held at the end, of sessions erased or no page was open on.
func TestContextPageKeepsNoContext(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "cp", "u1", "a1", 3)
	sub, err := u.nc.SubscribeSync("mem.v1.session.cp.context")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := u.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for load := range 2 {
		if code, body := get(t, u.base, "/ui/s/cp", nil, "", ""); code != 200 {
			t.Fatalf("load %d: %d %s", load, code, body)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("load %d: no context request seen: %v", load, err)
		}
		req := &memoryv1.ContextRequest{}
		if err := proto.Unmarshal(m.Data, req); err != nil {
			t.Fatal(err)
		}
		if v := req.GetIfVersion(); v != 0 {
			t.Fatalf("load %d asked with if_version %d: the inspector kept the context of an earlier page", load, v)
		}
	}
}
