package lastwrite

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/tenancy"
)

func TestSessionsKeepTheLastAndForgetPastTheBound(t *testing.T) {
	var w Sessions
	w.Note("s", 5)
	w.Note("s", 9)
	w.Note("s", 7) // an older sequence answered late: counted, not last
	if c := w.Get("s"); c.Last != 9 || c.N != 3 {
		t.Fatalf("commands %+v", c)
	}
	for i := range MaxSessions {
		w.Note(fmt.Sprint(i), 1)
	}
	if c := w.Get("s"); c != (Commands{}) {
		t.Fatalf("past %d sessions %+v is still remembered", MaxSessions, c)
	}
}

func TestRecentOthersAndCallers(t *testing.T) {
	a, b := &tenancy.Caller{}, &tenancy.Caller{}
	var r Recent
	r.Note(a, "s1", 10)
	r.Note(a, "s2", 20)
	r.Note(b, "s3", 30)
	if got := r.Others(a, "s2"); got != 10 {
		t.Fatalf("a's writes to sessions other than s2: %d, want 10", got)
	}
	if got := r.Others(a, "new"); got != 20 {
		t.Fatalf("a's writes to sessions other than a new one: %d, want 20", got)
	}
	for i := range RecentSessions {
		r.Note(a, fmt.Sprint("x", i), uint64(i))
	}
	if got := r.Others(a, "new"); got != RecentSessions-1 {
		t.Fatalf("after %d newer sessions a's oldest writes are still remembered: %d", RecentSessions, got)
	}
	var c Callers
	c.Note(a, 7)
	c.Note(a, 3)
	if c.Last(a) != 7 || c.Last(b) != 0 {
		t.Fatalf("callers: a %d, b %d", c.Last(a), c.Last(b))
	}
}
