package swap

import (
	_ "embed"
	"slices"
	"strings"
	"sync"
)

// Query expansion by related words: a question that names what it asks
// about in other words than the answer ("which instrument", "the drum kit
// I bought") finds nothing by its own terms. related.txt lists groups of
// everyday words, a category's heads with its members; Expand maps the
// terms of a query to the terms of its groups, which a search adds with a
// lower weight than the query's own. It is data, not code: add a line to
// widen it. The file is analyzed like a query at first use.

//go:embed related.txt
var relatedText string

// MaxExpansions bounds the terms Expand returns for one query.
const MaxExpansions = 48

// relatedGroup is one line of related.txt, each phrase as its terms.
type relatedGroup struct {
	heads, members [][]string
}

var (
	relatedOnce   sync.Once
	relatedGroups []relatedGroup
	// relatedByTerm indexes the groups by each term of their phrases.
	relatedByTerm map[string][]int
)

func loadRelated() {
	relatedByTerm = map[string][]int{}
	for _, line := range strings.Split(relatedText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		headPart, memberPart, _ := strings.Cut(line, "|")
		g := relatedGroup{heads: phrases(headPart), members: phrases(memberPart)}
		if len(g.heads) == 0 {
			continue
		}
		i := len(relatedGroups)
		relatedGroups = append(relatedGroups, g)
		for _, ph := range slices.Concat(g.heads, g.members) {
			for _, t := range ph {
				if ids := relatedByTerm[t]; len(ids) == 0 || ids[len(ids)-1] != i {
					relatedByTerm[t] = append(ids, i)
				}
			}
		}
	}
}

// phrases analyzes a comma-separated list of phrases.
func phrases(list string) [][]string {
	var out [][]string
	for _, p := range strings.Split(list, ",") {
		if ts := QueryTerms(p); len(ts) > 0 {
			out = append(out, ts)
		}
	}
	return out
}

// Expand returns the terms related to the query terms: for each group
// with a head phrase among them (all of its terms present) every other
// head and member, and for each group with a member phrase among them its
// heads. Terms of the query and stop terms are left out; at most
// MaxExpansions, in group order.
func Expand(terms []string) []string {
	relatedOnce.Do(loadRelated)
	in := map[string]bool{}
	for _, t := range terms {
		in[t] = true
	}
	has := func(ph []string) bool {
		for _, t := range ph {
			if !in[t] {
				return false
			}
		}
		return true
	}
	var groups []int
	for _, t := range terms {
		for _, g := range relatedByTerm[t] {
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	seen := map[string]bool{}
	var out []string
	add := func(phs [][]string) {
		for _, ph := range phs {
			for _, t := range ph {
				if len(out) < MaxExpansions && !in[t] && !seen[t] && !IsStopTerm(t) {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	for _, gi := range groups {
		g := relatedGroups[gi]
		switch {
		case slices.ContainsFunc(g.heads, has):
			add(g.heads)
			add(g.members)
		case slices.ContainsFunc(g.members, has):
			add(g.heads)
		}
	}
	return out
}
