package node_test

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// quietHeap measures the soak's quiet live heap: after two collections,
// with no operation in flight (the clients paused at the gate), so that
// what is measured is what the node keeps, not the pages and contexts
// being built at that moment (which made the heap after collections swing
// by 20 MB between two samples of a running soak).
//
// It is measured after the warm-up, once the live sessions turned over
// (every erase period the oldest of the eight goes and a new one comes,
// so a session lives eight periods and the live ones' state, never
// reaching their budget, grows until then; half the run if shorter), at
// half the way from there to the end, at the last sample (the clients
// paused, as at the two before: the same conditions), and at the end
// (the clients gone: their client's own memory and the stream's block
// cache, idle, go too, so it is lower).
type quietHeap struct {
	warmAt, midAt, lastAt time.Duration
	points                []heapPoint
}

type heapPoint struct {
	name string
	at   time.Duration
	live uint64
}

func newQuietHeap(run, erase, every time.Duration) *quietHeap {
	warm := min(8*erase, run/2)
	return &quietHeap{warmAt: warm, midAt: warm + (run-warm)/2, lastAt: run - every}
}

// maybeMeasure measures at the first sample past the warm-up, past the
// middle, and at the last.
func (h *quietHeap) maybeMeasure(t *testing.T, at time.Duration, gate *sync.RWMutex) {
	switch {
	case len(h.points) == 0 && at >= h.warmAt:
		h.measure(t, "warm-up", at, gate)
	case len(h.points) == 1 && at >= h.midAt:
		h.measure(t, "middle", at, gate)
	case len(h.points) == 2 && at >= h.lastAt:
		h.measure(t, "last", at, gate)
	}
}

// measure pauses the clients (gate, when not nil: their operations hold it
// shared), measures and writes the heap profile (-soak.heapprofile + "." +
// name).
func (h *quietHeap) measure(t *testing.T, name string, at time.Duration, gate *sync.RWMutex) {
	if gate != nil {
		gate.Lock()
		defer gate.Unlock()
	}
	h.points = append(h.points, heapPoint{name, at, heapAfterGC()})
	writeHeapProfile(t, "."+name)
}

// bound is what the end may reach: growth times the warm-up's, plus
// slack MB.
func (h *quietHeap) bound(growth float64, slack int) float64 {
	if len(h.points) == 0 {
		return 0
	}
	return growth*mb(h.points[0].live) + float64(slack)
}

func (h *quietHeap) report(w io.Writer, growth float64, slack int) {
	fmt.Fprint(w, "quiet live heap after two collections:")
	for _, p := range h.points {
		fmt.Fprintf(w, " %s (%s) %.1f MB;", p.name, p.at, mb(p.live))
	}
	fmt.Fprintf(w, " bound %.1f MB (%g × the warm-up + %d MB)\n", h.bound(growth, slack), growth, slack)
}

// check fails when a measure after the warm-up exceeds the bound.
func (h *quietHeap) check(growth float64, slack int) error {
	if len(h.points) < 2 {
		return nil // too short a run to have warmed up
	}
	warm, b := h.points[0], h.bound(growth, slack)
	for _, p := range h.points[1:] {
		if mb(p.live) > b {
			return fmt.Errorf("quiet live heap grew from %.1f MB after the warm-up (%s) to %.1f MB at the %s (%s), over %.1f MB (%g × + %d MB: -soak.heapgrowth, -soak.heapslack); -soak.heapprofile shows what",
				mb(warm.live), warm.at, mb(p.live), p.name, p.at, b, growth, slack)
		}
	}
	return nil
}
