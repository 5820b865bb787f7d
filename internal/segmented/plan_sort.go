package segmented

import (
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sortSpec sorts the special parts in Allocate's order (before): a merge
// sort over runs put in order by insertion, with the comparison inlined.
// slices.SortFunc called a closure per comparison, copying two parts each
// time, and was the largest single cost of allocate (about a hundred parts
// at every user message). The order is total (the index breaks ties), so
// any correct sort gives the same result; buf is scratch space, returned
// grown for the next call.
func sortSpec(spec, buf []specPart) []specPart {
	n := len(spec)
	const run = 12
	for lo := 0; lo < n; lo += run {
		insertionSortSpec(spec[lo:min(lo+run, n)])
	}
	if n <= run {
		return buf
	}
	if cap(buf) < n {
		buf = make([]specPart, n)
	}
	src, dst := spec, buf[:n]
	for width := run; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid, hi := min(lo+width, n), min(lo+2*width, n)
			mergeSpec(dst[lo:hi], src[lo:mid], src[mid:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &spec[0] {
		copy(spec, src)
	}
	return buf
}

func insertionSortSpec(s []specPart) {
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for ; j > 0 && x.before(&s[j-1]); j-- {
			s[j] = s[j-1]
		}
		s[j] = x
	}
}

// mergeSpec merges the sorted a and b into out (len(a)+len(b)).
func mergeSpec(out, a, b []specPart) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].before(&a[i]) {
			out[k] = b[j]
			j++
		} else {
			out[k] = a[i]
			i++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

// before reports whether x comes before y in Allocate's order.
func (x *specPart) before(y *specPart) bool {
	return before(x.den, x.val, int(x.idx), y.den, y.val, int(y.idx))
}

// sortRecalled sorts the recalled section by compareRecalled. When every
// item is the session's own (no other session's item: the common case)
// and no two share a seq and kind, that order is by seq, a message before
// an archived summary ending at it: the items are sorted as integer keys
// (seq, kind, index), keys and spare in buffers kept by the planner.
func sortRecalled(items []*memoryv1.RecalledItem, keys *[]uint64, spare *[]*memoryv1.RecalledItem) {
	const idxBits = 16
	if len(items) < 2 || len(items) >= 1<<idxBits {
		slices.SortFunc(items, compareRecalled)
		return
	}
	ks := (*keys)[:0]
	for i, it := range items {
		seq := it.GetSeq()
		if it.GetSessionId() != "" || seq >= 1<<(63-idxBits) {
			slices.SortFunc(items, compareRecalled)
			return
		}
		kind := uint64(0)
		if it.GetSummaryId() != "" {
			kind = 1
		}
		ks = append(ks, (seq<<1|kind)<<idxBits|uint64(i))
	}
	*keys = ks
	slices.Sort(ks)
	for i := 1; i < len(ks); i++ {
		if ks[i]>>idxBits == ks[i-1]>>idxBits {
			// Two summaries ending at one seq: their ids decide.
			slices.SortFunc(items, compareRecalled)
			return
		}
	}
	was := append((*spare)[:0], items...)
	*spare = was
	for i, k := range ks {
		items[i] = was[k&(1<<idxBits-1)]
	}
	clear(was) // the spare holds no item after the plan
}
