package consolidate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
	"github.com/agentmem/agentmem/internal/swap"
)

// Episode summaries: similar old episodes are summarized.
// An agent's scope gains one episodic entry per session that tried
// something; when a new episode finds SummaryAfter similar older ones,
// they become one summary entry (extractive: the common task, the
// outcomes counted, the latest outcome in the user's words) and the older
// entries are marked consolidated_into it (api).

const (
	// EpisodeSimilarity is the least Jaccard similarity of two episodes'
	// task terms (stemmed words of what was tried, stop words dropped) for
	// them to be similar: "restarting the router" and "restarting my
	// router" (1.0) are; "restarting the router" and "rebooting the
	// router" (1/3) are not.
	EpisodeSimilarity = 0.5
	// DefaultSummaryAfter: a new episode with this many similar older
	// live episodes is summarized with them.
	DefaultSummaryAfter = 8
	// MaxSummaryAfter bounds SummaryAfter: a summary's metadata names
	// each source session and user (sharedmem.MaxMetadata pairs).
	MaxSummaryAfter = 9
	// SummaryKeyPrefix: the keys of summary entries.
	SummaryKeyPrefix = "episode/summary/"
)

// Episode is an episodic entry as SummarizeEpisodes reads it.
type Episode struct {
	Key     string
	Version uint64
	Task    string // what was tried, in words (TaskOf the attribute)
	Text    string // what the user said (the entry value)
	Session string // the source session
	User    string // the source user ("" when none)
	At      int64  // last update (unix nano): orders episodes, ties by key
	Said    int64  // when it was said (unix nano, 0 unknown)
	// A summary input (Key under SummaryKeyPrefix): the episodes it counts
	// and how many of them worked.
	Summary       bool
	Count, Worked int
}

// TaskOf is the task of an episode's attribute ("tried/restarting_the_router"
// → "restarting the router").
func TaskOf(attribute string) string {
	a := strings.TrimPrefix(attribute, "tried/")
	return strings.TrimSpace(strings.NewReplacer("/", " ", "_", " ").Replace(a))
}

// TaskTerms are the stemmed words of task, stop words dropped.
func TaskTerms(task string) map[string]bool {
	out := map[string]bool{}
	for _, t := range swap.Analyze(task) {
		if !swap.IsStopTerm(t) {
			out[t] = true
		}
	}
	return out
}

// SimilarTasks reports whether two tasks' terms share at least
// EpisodeSimilarity of their union.
func SimilarTasks(a, b map[string]bool) bool {
	return len(a) > 0 && len(b) > 0 && jaccard(a, b) >= EpisodeSimilarity-1e-9
}

// jaccard is |a ∩ b| / |a ∪ b| (0 when both are empty).
func jaccard(a, b map[string]bool) float64 {
	shared := 0
	for t := range a {
		if b[t] {
			shared++
		}
	}
	if u := len(a) + len(b) - shared; u > 0 {
		return float64(shared) / float64(u)
	}
	return 0
}

// Outcome words of an episode (the "tried" rule's endings): a failure word
// wins over a success word ("it didn't help" holds "help").
var (
	failedWords = []string{"didn't", "didn’t", "did not", "doesn't", "doesn’t", "does not", "failed", "fails", "no luck",
		"did nothing", "changed nothing", "made it worse", "broke", "crashed", "timed out", "errored", "error"}
	workedWords = []string{"worked", "works", "helped", "fixed", "solved"}
)

// EpisodeWorked reports whether the episode text says what was tried worked.
func EpisodeWorked(text string) bool {
	lower := strings.ToLower(text)
	return !facts.ContainsAny(lower, failedWords) && facts.ContainsAny(lower, workedWords)
}

// EpisodeSummary is the summary of similar episodes.
type EpisodeSummary struct {
	Key, Task, Text string
	Count, Worked   int
	Latest          Episode  // the newest episode (not a summary)
	Sessions, Users []string // distinct, sorted: the sources' (a summary input's are in its key's history)
	Sources         []string // "key@version" of every input, sorted
}

// SummarizeEpisodes summarizes eps (at least one not a summary; at most one
// summary, whose key the result keeps). It is deterministic: the same
// inputs in any order give the same summary.
func SummarizeEpisodes(eps []Episode) EpisodeSummary {
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b Episode) int {
		if a.At != b.At {
			return int(min(max(a.At-b.At, -1), 1))
		}
		return strings.Compare(a.Key, b.Key)
	})
	var out EpisodeSummary
	tasks := map[string]int{}
	sessions, users := map[string]bool{}, map[string]bool{}
	for _, e := range eps {
		out.Sources = append(out.Sources, fmt.Sprintf("%s@%d", e.Key, e.Version))
		if e.Summary {
			out.Key = e.Key
			out.Count += e.Count
			out.Worked += e.Worked
			tasks[e.Task] += e.Count
			continue
		}
		out.Count++
		if EpisodeWorked(e.Text) {
			out.Worked++
		}
		tasks[e.Task]++
		out.Latest = e
		if e.Session != "" {
			sessions[e.Session] = true
		}
		if e.User != "" {
			users[e.User] = true
		}
	}
	// The common task: the most central one (the sum, over the episodes
	// counted, of its similarity with theirs), ties to the earliest (the
	// first wording stays the summary's as rounds go by).
	best := -1.0
	for i := range eps {
		a := TaskTerms(eps[i].Task)
		c := 0.0
		for task, n := range tasks {
			c += float64(n) * jaccard(a, TaskTerms(task))
		}
		if c > best+1e-9 {
			best, out.Task = c, eps[i].Task
		}
	}
	if out.Key == "" {
		out.Key = SummaryKeyPrefix + slug(out.Task)
	}
	slices.Sort(out.Sources)
	out.Sessions, out.Users = sortedKeys(sessions), sortedKeys(users)
	times := "times"
	if out.Count == 1 {
		times = "time"
	}
	out.Text = fmt.Sprintf("Tried %s %d %s: worked %d, did not work %d. Latest (session %s): %s",
		out.Task, out.Count, times, out.Worked, out.Count-out.Worked, out.Latest.Session, out.Latest.Text)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
