package events

import (
	"context"
	"maps"
	"testing"
)

// TestSubjectCounts: both logs name the subjects a filter matches with
// their message counts, and leave out a subject whose messages are gone.
func TestSubjectCounts(t *testing.T) {
	js, _ := newTestJetStreamLog(t)
	for name, l := range map[string]interface {
		Log
		SubjectLister
	}{"mem": NewMemLog(), "jetstream": js} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for i, s := range []string{ScopeSubject("workflow", "w1"), ScopeSubject("workflow", "w1"), ScopeSubject("workflow", "w2"), SessionSubject("s1")} {
				last, err := l.LastSeq(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Append(ctx, s, last, name+string(rune('a'+i)), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			got, err := l.SubjectCounts(ctx, SubjectPrefix+".workflow.*")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{"mem.ev.workflow.w1": 2, "mem.ev.workflow.w2": 1}
			if !maps.Equal(got, want) {
				t.Errorf("workflow subjects: %v, want %v", got, want)
			}
			if got, _ := l.SubjectCounts(ctx, SubjectPrefix+".>"); len(got) != 3 {
				t.Errorf("every subject: %v, want 3", got)
			}
		})
	}
}

func TestNatsMatch(t *testing.T) {
	for _, c := range []struct {
		f, s string
		ok   bool
	}{{"a.*", "a.b", true}, {"a.*", "a.b.c", false}, {"a.>", "a.b.c", true}, {"a.>", "a", false}, {"a.b", "a.b", true}, {"a.b", "a.c", false}} {
		if natsMatch(c.f, c.s) != c.ok {
			t.Errorf("natsMatch(%q, %q) = %v", c.f, c.s, !c.ok)
		}
	}
}
