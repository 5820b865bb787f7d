package consolidate

import (
	"strings"
	"testing"
)

func TestSimilarTasks(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"restarting the router", "restarting my router", true},
		{"restarting the router", "restarted the router again", true},
		{"restarting the router", "rebooting the router", false},
		{"restarting the router", "clearing the cache", false},
		{"", "clearing the cache", false},
	} {
		if got := SimilarTasks(TaskTerms(c.a), TaskTerms(c.b)); got != c.want {
			t.Errorf("SimilarTasks(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestEpisodeWorked(t *testing.T) {
	for text, want := range map[string]bool{
		"I tried restarting the router, but it didn't help.": false,
		"I tried restarting the router and it worked.":       true,
		"I tried clearing the cache, it fixed it!":           true,
		"I tried the VPN but it still failed.":               false,
		"I tried the VPN, no luck.":                          false,
	} {
		if got := EpisodeWorked(text); got != want {
			t.Errorf("EpisodeWorked(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestSummarizeEpisodes: the summary counts outcomes, keeps the latest in
// the user's words, names each source, and does not depend on the order
// of its inputs; a summary input keeps its key and its counts.
func TestSummarizeEpisodes(t *testing.T) {
	eps := []Episode{
		{Key: "episode/user/tried/restarting_the_router", Version: 1, Task: "restarting the router", Text: "I tried restarting the router, but it didn't help.", Session: "s1", User: "u1", At: 10},
		{Key: "episode/user/tried/restarting_my_router", Version: 2, Task: "restarting my router", Text: "I tried restarting my router and it worked.", Session: "s2", User: "u2", At: 20},
		{Key: "episode/user/tried/restarting_the_router_again", Version: 1, Task: "restarting the router again", Text: "I tried restarting the router again, no luck.", Session: "s3", User: "u1", At: 30},
	}
	s := SummarizeEpisodes(eps)
	rev := SummarizeEpisodes([]Episode{eps[2], eps[0], eps[1]})
	if s.Text != rev.Text || s.Key != rev.Key || strings.Join(s.Sources, ",") != strings.Join(rev.Sources, ",") {
		t.Fatalf("order changed the summary:\n%+v\n%+v", s, rev)
	}
	if s.Count != 3 || s.Worked != 1 || s.Latest.Session != "s3" || s.Key != "episode/summary/restarting_the_router" {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(s.Text, "3 times: worked 1, did not work 2") || !strings.HasSuffix(s.Text, "(session s3): I tried restarting the router again, no luck.") {
		t.Fatalf("text %q", s.Text)
	}
	if strings.Join(s.Sessions, ",") != "s1,s2,s3" || strings.Join(s.Users, ",") != "u1,u2" || len(s.Sources) != 3 {
		t.Fatalf("sources %v %v %v", s.Sessions, s.Users, s.Sources)
	}
	next := SummarizeEpisodes([]Episode{
		{Key: s.Key, Version: 1, Task: s.Task, Summary: true, Count: s.Count, Worked: s.Worked, At: 40},
		{Key: "episode/user/tried/restarting_the_router_twice", Version: 1, Task: "restarting the router twice", Text: "I tried restarting the router twice and it worked.", Session: "s4", At: 50},
	})
	if next.Key != s.Key || next.Count != 4 || next.Worked != 2 || strings.Join(next.Sessions, ",") != "s4" {
		t.Fatalf("a summary re-summarized: %+v", next)
	}
}

func TestCanonicalAttribute(t *testing.T) {
	for in, want := range map[string]string{
		"current_city":      "home_city",
		"home_city":         "home_city",
		"hometown":          "hometown",
		"allergies/peanuts": "allergy/peanuts",
		"allergy/peanuts":   "allergy/peanuts",
		"company":           "employer",
		"favorite_color":    "favorite_color",
		"city/extra":        "city/extra",
		"languages/greek":   "speaks/greek",
	} {
		if got := CanonicalAttribute(in); got != want {
			t.Errorf("CanonicalAttribute(%q) = %q, want %q", in, got, want)
		}
	}
}
