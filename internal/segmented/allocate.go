package segmented

import (
	"cmp"
	"slices"
)

// The allocation: at a user message, everything that could
// go into the context beyond its floors — older L1 turns, summaries,
// recalled turns of the swap, scope entries — is a Part with a token cost
// and an expected use to the LLM for that message (its Value), and one
// budget is filled by value per token. Nothing is reserved for a kind: a
// share one kind does not need goes to the others. Allocate is the pure
// core; plan.go turns a session and its candidates into Parts (with the
// weights below) and the chosen Parts into an Assembled.

// PartKind is what a Part would show.
type PartKind uint8

// Part kinds.
const (
	// PartL1 is an L1 entry older than the verbatim tail (a message, or a
	// tool call with its results), shown in place.
	PartL1 PartKind = iota
	// PartSummary is an L2 summary, or a summary in L1 older than the tail.
	PartSummary
	// PartRecalled is a message of the swap, shown in the recalled section
	// with its source.
	PartRecalled
	// PartMemory is a scope entry, shown in the memory section.
	PartMemory
	// PartEarlier is a message of another session of the same user (or
	// agent), shown in the recalled section by reference.
	PartEarlier
	numPartKinds
)

// Part is one candidate of the allocation.
type Part struct {
	Kind   PartKind
	Tokens uint64
	// Value is the expected use to the LLM of the part for the latest user
	// message, in [0, 1] (see the weights in plan.go); a part of value 0 is
	// never taken.
	Value float64
}

// densityFloorTokens is the least a part counts as when its value is
// divided by its tokens: a three-word turn would otherwise outrank every
// real answer on value per token alone.
const densityFloorTokens = 40

func (p Part) density() float64 {
	return p.Value / float64(max(p.Tokens, densityFloorTokens))
}

// Allocate chooses parts to fill room tokens: by value per token, best
// first (ties: the higher value, then the lower index), each taken when it
// fits in what is left of room and of its kind's cap (caps[kind]; 0: no
// cap but room). It returns the indexes of the chosen parts, ascending.
// Parts of value <= 0 or of 0 tokens are never taken.
func Allocate(parts []Part, room uint64, caps [numPartKinds]uint64) []int {
	order := make([]int, 0, len(parts))
	for i, p := range parts {
		if p.Value > 0 && p.Tokens > 0 && p.Kind < numPartKinds {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		pa, pb := parts[a], parts[b]
		if c := cmp.Compare(pb.density(), pa.density()); c != 0 {
			return c
		}
		if c := cmp.Compare(pb.Value, pa.Value); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var used uint64
	var byKind [numPartKinds]uint64
	chosen := make([]int, 0, len(order))
	for _, i := range order {
		p := parts[i]
		if p.Tokens > room-used {
			continue
		}
		if c := caps[p.Kind]; c > 0 && p.Tokens > c-min(c, byKind[p.Kind]) {
			continue
		}
		used += p.Tokens
		byKind[p.Kind] += p.Tokens
		chosen = append(chosen, i)
	}
	slices.Sort(chosen)
	return chosen
}
