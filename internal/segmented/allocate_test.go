package segmented

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"pgregory.net/rapid"
)

// naiveAllocate is the reference of Allocate, written the plain way:
// repeatedly take, of the parts not yet taken that still fit (room and
// their kind's cap), the one of the highest value per token (ties: higher
// value, then lower index).
func naiveAllocate(parts []Part, room uint64, caps [numPartKinds]uint64) []int {
	taken := make([]bool, len(parts))
	var used uint64
	var byKind [numPartKinds]uint64
	fits := func(p Part) bool {
		if p.Value <= 0 || p.Tokens == 0 || used+p.Tokens > room {
			return false
		}
		return caps[p.Kind] == 0 || byKind[p.Kind]+p.Tokens <= caps[p.Kind]
	}
	skipped := make([]bool, len(parts))
	for {
		best := -1
		for i, p := range parts {
			if taken[i] || skipped[i] || p.Value <= 0 || p.Tokens == 0 {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			b := parts[best]
			db := b.Value / float64(max(b.Tokens, densityFloorTokens))
			dp := p.Value / float64(max(p.Tokens, densityFloorTokens))
			if dp > db || (dp == db && p.Value > b.Value) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		// The best by density is considered once: taken if it fits,
		// passed over for good otherwise (what fits later is smaller).
		if fits(parts[best]) {
			taken[best] = true
			used += parts[best].Tokens
			byKind[parts[best].Kind] += parts[best].Tokens
		} else {
			skipped[best] = true
		}
	}
	var out []int
	for i, t := range taken {
		if t {
			out = append(out, i)
		}
	}
	return out
}

func TestAllocateMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		parts := make([]Part, n)
		for i := range parts {
			parts[i] = Part{
				Kind:   PartKind(rapid.IntRange(0, int(numPartKinds)-1).Draw(rt, "kind")),
				Tokens: uint64(rapid.IntRange(0, 400).Draw(rt, "tokens")),
				Value:  float64(rapid.IntRange(-2, 20).Draw(rt, "value")) / 20,
			}
		}
		var caps [numPartKinds]uint64
		for k := range caps {
			caps[k] = uint64(rapid.SampledFrom([]int{0, 0, 100, 500}).Draw(rt, "cap"))
		}
		room := uint64(rapid.IntRange(0, 3000).Draw(rt, "room"))
		got := Allocate(parts, room, caps)
		want := naiveAllocate(parts, room, caps)
		if !slices.Equal(got, want) {
			rt.Fatalf("Allocate %v, reference %v", got, want)
		}
		var used uint64
		var byKind [numPartKinds]uint64
		for _, i := range got {
			used += parts[i].Tokens
			byKind[parts[i].Kind] += parts[i].Tokens
			if parts[i].Value <= 0 {
				rt.Fatalf("took part %d of value %v", i, parts[i].Value)
			}
		}
		if used > room {
			rt.Fatalf("used %d of room %d", used, room)
		}
		for k, c := range caps {
			if c > 0 && byKind[k] > c {
				rt.Fatalf("kind %d: %d tokens over its cap %d", k, byKind[k], c)
			}
		}
	})
}

// With a plan, an older L1 turn that the search found is shown, older
// turns it did not find are hidden when the room is needed, the tail
// always shows, and the context stays within the budget.
func TestPlanShowsHitsFromOlderL1(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2500, ReservedOutputTokens: 500})
	var planted *memoryv1.Message
	var stored []*memoryv1.Message
	for i := range 90 {
		text := fmt.Sprintf("Filler answer %d: sunny, sandwiches, and a walk by the river after the standup meeting with everyone.", i)
		if i == 5 {
			text = "Remember this: the staging database password rotates on the 14th, owner is Priya Raman."
		}
		evs := appendOK(t, s, user(fmt.Sprintf("Filler question %d about the weather?", i)), assistant(text))
		var ms []*memoryv1.Message
		for _, ev := range evs {
			if a, ok := ev.(*memoryv1.MessagesAppended); ok {
				ms = a.Messages
			}
		}
		stored = append(stored, ms...)
		if i == 5 {
			planted = ms[1]
		}
	}
	// Many swap hits of filler, and the planted turn (still in L1 or in the
	// swap) ranked last but with the best score.
	c := &Candidates{}
	for _, m := range stored[:30] {
		if m.Id != planted.Id {
			c.Recall = append(c.Recall, m)
			c.RecallScores = append(c.RecallScores, 1)
		}
	}
	c.Recall = append([]*memoryv1.Message{planted}, c.Recall...)
	c.RecallScores = append([]float64{9}, c.RecallScores...)
	appendWith(t, s, c, user("Who owns the staging database password?"))
	ctx := s.Context()
	var text strings.Builder
	for _, m := range ctx.Messages {
		text.WriteString(m.Content)
	}
	if !strings.Contains(text.String(), "Priya Raman") {
		t.Fatalf("the best hit is not in the context: %v", s.Assembled())
	}
	last := ctx.Messages[len(ctx.Messages)-1]
	if last.Content != "Who owns the staging database password?" {
		t.Fatalf("the latest user message is not last: %v", last)
	}
	if !s.Assembled().GetPlanned() {
		t.Fatal("no plan")
	}
}
