package actors

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// appendOf dispatches a (checked) Append and waits for the reply.
func appendOf(t *testing.T, h *harness, id string, a *Append) (proto.Message, error) {
	t.Helper()
	type result struct {
		m   proto.Message
		err error
	}
	ch := make(chan result, 1)
	if err := h.dir.Dispatch(id, nil, a, func(m proto.Message, err error) { ch <- result{m, err} }); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("no reply on %s", id)
		return nil, nil
	}
}

// A checked Append is decided only with candidates searched for the
// session's own key: otherwise it is answered NeedCandidates with that key
// and nothing is stored; a session that does not assemble ignores them.
func TestCheckedAppend(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "a1", &memoryv1.CreateSessionRequest{UserId: "u1", Project: "p1"})
	req := func() *memoryv1.AppendRequest {
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("what about region 3?")}}
	}
	_, err := appendOf(t, h, "a1", &Append{Request: req(), Checked: true})
	var need *NeedCandidates
	if !errors.As(err, &need) {
		t.Fatalf("unsearched append: %v, want NeedCandidates", err)
	}
	want := segmented.CandidateKey{Memory: true, User: "u1", Project: "p1"}
	if need.Key != want {
		t.Fatalf("key %+v, want %+v", need.Key, want)
	}
	stale := want
	stale.User = "u0"
	if _, err := appendOf(t, h, "a1", &Append{Request: req(), Checked: true, Key: &stale}); !errors.As(err, &need) {
		t.Fatalf("append searched for another key: %v, want NeedCandidates", err)
	}
	if v := h.must(t, "a1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply).GetSession().GetVersion(); v != 1 {
		t.Fatalf("refused appends stored something: version %d", v)
	}
	if _, err := appendOf(t, h, "a1", &Append{Request: req(), Checked: true, Key: &want, Candidates: &segmented.Candidates{}}); err != nil {
		t.Fatalf("append searched for the session's key: %v", err)
	}

	h.must(t, "off", &memoryv1.CreateSessionRequest{UserId: "u1", Assembly: &memoryv1.AssemblyConfig{}})
	if _, err := appendOf(t, h, "off", &Append{Request: req(), Checked: true}); err != nil {
		t.Fatalf("append to a session that does not assemble: %v", err)
	}
	if _, err := appendOf(t, h, "missing", &Append{Request: req(), Checked: true}); err == nil || errors.As(err, &need) {
		t.Fatalf("append to no session: %v, want 404", err)
	}
}
