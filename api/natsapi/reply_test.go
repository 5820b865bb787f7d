package natsapi

import "testing"

func TestReplyAllowed(t *testing.T) {
	for _, tc := range []struct {
		subject string
		want    bool
	}{
		{"_INBOX.abc.def", true},
		{"_R_.x1Yz.aB", true},
		{"", false},
		{"_INBOX.", false},
		{"_INBOX.*", false},
		{"_INBOX.>", false},
		{"_INBOX..x", false},
		{"$JS.API.STREAM.PURGE.MEM", false},
		{"$JS.API.STREAM.DELETE.MEM", false},
		{"$KV.MEM_SNAPSHOTS.session.s1", false},
		{"$O.MEM_DATA.C.x", false},
		{"$SRV.PING", false},
		{"$SYS.REQ.SERVER.PING", false},
		{"mem.ev.agent.a2", false},
		{"mem.v1.agent.a2.delete", false},
		{"foo.bar", false},
	} {
		if got := replyAllowed(tc.subject, DefaultReplyPrefixes); got != tc.want {
			t.Errorf("replyAllowed(%q) = %v, want %v", tc.subject, got, tc.want)
		}
	}
	// The node's own spaces stay refused even when an operator allows them.
	if replyAllowed("mem.ev.agent.a2", []string{"mem."}) || replyAllowed("$JS.API.X", []string{"$"}) {
		t.Fatal("own subject space answered under a permissive prefix list")
	}
}
