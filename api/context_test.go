package api_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// contextReply asks session id for its context with if_version over NATS
// (protobuf) and returns the reply and its size on the wire.
func contextReply(t *testing.T, send func(subject string, data []byte, asJSON bool) (string, string, []byte), id string, ifVersion uint64) (*memoryv1.ContextReply, int) {
	t.Helper()
	code, desc, body := send("mem.v1.session."+id+".context", marshal(t, &memoryv1.ContextRequest{IfVersion: ifVersion}), false)
	if code != "" {
		t.Fatalf("context: %s %s", code, desc)
	}
	r := &memoryv1.ContextReply{}
	if err := proto.Unmarshal(body, r); err != nil {
		t.Fatal(err)
	}
	return r, len(body)
}

// TestContextIfVersion: a context asked with the current version answers
// "not modified" in a few bytes (protobuf and JSON); after an append the
// same if_version gets the whole new context; an older or unknown version
// gets the whole context.
func TestContextIfVersion(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	send := func(subject string, data []byte, asJSON bool) (string, string, []byte) {
		return rawRequest(t, nc, subject, data, asJSON)
	}
	if code, desc, _ := send("mem.v1.session.iv.create", marshal(t, &memoryv1.CreateSessionRequest{SystemPrompt: "Be brief."}), false); code != "" {
		t.Fatalf("create: %s %s", code, desc)
	}
	for i := range 20 {
		if code, desc, _ := send("mem.v1.session.iv.append", marshal(t, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user(fmt.Sprintf("message %d about the quarterly numbers", i))}}), false); code != "" {
			t.Fatalf("append: %s %s", code, desc)
		}
	}
	full, fullSize := contextReply(t, send, "iv", 0)
	if full.GetNotModified() || len(full.GetMessages()) < 20 {
		t.Fatalf("first context: not_modified %v, %d messages", full.GetNotModified(), len(full.GetMessages()))
	}
	same, size := contextReply(t, send, "iv", full.GetVersion())
	if !same.GetNotModified() || same.GetVersion() != full.GetVersion() || same.GetSeq() != full.GetSeq() || len(same.GetMessages()) != 0 || size > 32 {
		t.Fatalf("unchanged context: not_modified %v version %d/%d seq %d/%d, %d messages, %d bytes (full %d)",
			same.GetNotModified(), same.GetVersion(), full.GetVersion(), same.GetSeq(), full.GetSeq(), len(same.GetMessages()), size, fullSize)
	}
	if old, _ := contextReply(t, send, "iv", full.GetVersion()-1); old.GetNotModified() || len(old.GetMessages()) != len(full.GetMessages()) {
		t.Fatalf("older if_version: not_modified %v", old.GetNotModified())
	}

	// JSON: if_version in, not_modified out.
	code, desc, body := send("mem.v1.session.iv.context", fmt.Appendf(nil, `{"if_version": %d}`, full.GetVersion()), true)
	if code != "" || !strings.Contains(string(body), `"not_modified":true`) || strings.Contains(string(body), "quarterly") {
		t.Fatalf("JSON unchanged context: %s %s %s", code, desc, body)
	}

	if code, desc, _ := send("mem.v1.session.iv.append", marshal(t, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("one more")}}), false); code != "" {
		t.Fatalf("append: %s %s", code, desc)
	}
	changed, _ := contextReply(t, send, "iv", full.GetVersion())
	if changed.GetNotModified() || changed.GetVersion() <= full.GetVersion() || len(changed.GetMessages()) == 0 {
		t.Fatalf("changed context: not_modified %v version %d after %d", changed.GetNotModified(), changed.GetVersion(), full.GetVersion())
	}
	code, _, body = send("mem.v1.session.iv.context", fmt.Appendf(nil, `{"ifVersion": %d}`, full.GetVersion()), true)
	if code != "" || !strings.Contains(string(body), "one more") || strings.Contains(string(body), `"not_modified":true`) {
		t.Fatalf("JSON changed context: %s %s", code, body)
	}
}
