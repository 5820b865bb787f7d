package actors

import (
	"errors"
	"testing"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

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
	_, err := h.call(t, "a1", &Append{Request: req(), Checked: true})
	var need *NeedCandidates
	if !errors.As(err, &need) {
		t.Fatalf("unsearched append: %v, want NeedCandidates", err)
	}
	want := segmented.CandidateKey{Memory: true, Cross: true, Depth: segmented.MaxEarlierCandidates, User: "u1", Project: "p1"} // the default budget is large
	if need.Key != want {
		t.Fatalf("key %+v, want %+v", need.Key, want)
	}
	stale := want
	stale.User = "u0"
	if _, err := h.call(t, "a1", &Append{Request: req(), Checked: true, Key: &stale}); !errors.As(err, &need) {
		t.Fatalf("append searched for another key: %v, want NeedCandidates", err)
	}
	if v := h.must(t, "a1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply).GetSession().GetVersion(); v != 1 {
		t.Fatalf("refused appends stored something: version %d", v)
	}
	if _, err := h.call(t, "a1", &Append{Request: req(), Checked: true, Key: &want, Candidates: &segmented.Candidates{}}); err != nil {
		t.Fatalf("append searched for the session's key: %v", err)
	}

	h.must(t, "off", &memoryv1.CreateSessionRequest{UserId: "u1", Assembly: &memoryv1.AssemblyConfig{}})
	if _, err := h.call(t, "off", &Append{Request: req(), Checked: true}); err != nil {
		t.Fatalf("append to a session that does not assemble: %v", err)
	}
	if _, err := h.call(t, "missing", &Append{Request: req(), Checked: true}); err == nil || errors.As(err, &need) {
		t.Fatalf("append to no session: %v, want 404", err)
	}
}
