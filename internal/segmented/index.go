package segmented

import (
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// indexes are the lookups DecideAppend needs, derived from the snapshot and
// never stored in it. Apply maintains them from what each event adds and
// removes (O(event), see delta); buildIndexes computes them from a whole
// snapshot (FromSnapshot). Both must agree for every history: the property
// tests compare them after every command.
type indexes struct {
	// ids counts the occurrences of each message id the session still
	// knows: verbatim in L1 or promoted, or listed by an L1 or L2 summary.
	ids map[string]int32
	// callIDs counts the occurrences of each tool call id in the tool calls
	// of the verbatim L1 messages and in the Kernel's tool result refs: the
	// ids a new tool call may not reuse.
	callIDs map[string]int32
	// calls lists, per tool call id, the verbatim L1 messages that open it
	// (a tool call) or answer it (a tool message), in seq order. The call is
	// open when the last one opens it; see open.
	calls map[string][]callOp
}

// callOp is one verbatim L1 message that opens (a tool call with name) or
// answers (result) a tool call id.
type callOp struct {
	seq    uint64
	name   string
	result bool
}

func newIndexes() *indexes {
	return &indexes{ids: map[string]int32{}, callIDs: map[string]int32{}, calls: map[string][]callOp{}}
}

// buildIndexes computes the indexes of snap from scratch.
func buildIndexes(snap *memoryv1.SessionSnapshot) *indexes {
	x := newIndexes()
	if snap == nil {
		return x
	}
	for _, sum := range snap.L2 {
		x.summary(sum, 1)
	}
	for _, m := range snap.Promoted {
		x.id(m.Id, 1)
	}
	for _, e := range snap.L1 {
		x.entry(e, 1, false)
	}
	for _, r := range snap.GetKernel().GetToolResults() {
		x.callID(r.ToolCallId, 1)
	}
	return x
}

// known reports whether the session still knows message id (see
// State.DecideAppend for why archived ids are not included).
func (x *indexes) known(id string) bool { return x.ids[id] > 0 }

// seenCall reports whether a tool call id is in use: in a verbatim L1 tool
// call (open or answered) or in a Kernel tool result ref.
func (x *indexes) seenCall(id string) bool { return x.callIDs[id] > 0 }

// open returns the tool name of a call still waiting for its result:
// opened by a verbatim L1 message and not answered by a later one.
// Compression never takes a group with a pending call, so open calls are
// all verbatim in L1.
func (x *indexes) open(id string) (string, bool) {
	ops := x.calls[id]
	if n := len(ops); n > 0 && !ops[n-1].result {
		return ops[n-1].name, true
	}
	return "", false
}

func (x *indexes) id(id string, d int32) { count(x.ids, id, d) }

func (x *indexes) callID(id string, d int32) { count(x.callIDs, id, d) }

func count(m map[string]int32, k string, d int32) {
	if n := m[k] + d; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// summary adds (d = 1) or removes (d = -1) the ids a summary covers.
func (x *indexes) summary(sum *memoryv1.Summary, d int32) {
	for _, id := range sum.GetMessageIds() {
		x.id(id, d)
	}
}

// entry adds (d = 1) or removes (d = -1) an L1 entry; with noIDs its
// message ids are left out (see sameIDs). Entries are added in seq order
// (L1 only grows at the end), so calls stays in seq order.
func (x *indexes) entry(e *memoryv1.L1Entry, d int32, noIDs bool) {
	m := e.GetMessage()
	if m == nil {
		if !noIDs {
			x.summary(e.GetSummary(), d)
		}
		return
	}
	if !noIDs {
		x.id(m.Id, d)
	}
	for _, c := range m.ToolCalls {
		x.callID(c.Id, d)
		if d > 0 {
			x.calls[c.Id] = append(x.calls[c.Id], callOp{seq: m.Seq, name: c.Name})
		} else {
			x.dropOps(c.Id, m.Seq)
		}
	}
	if m.Role == memoryv1.Role_ROLE_TOOL {
		if d > 0 {
			x.calls[m.ToolCallId] = append(x.calls[m.ToolCallId], callOp{seq: m.Seq, result: true})
		} else {
			x.dropOps(m.ToolCallId, m.Seq)
		}
	}
}

// dropOps removes the ops of the message seq from the ops of call id.
func (x *indexes) dropOps(id string, seq uint64) {
	ops, ok := x.calls[id]
	if !ok {
		return
	}
	ops = slices.DeleteFunc(ops, func(o callOp) bool { return o.seq == seq })
	if len(ops) == 0 {
		delete(x.calls, id)
		return
	}
	x.calls[id] = ops
}

// sameIDs reports whether ids lists exactly the message ids of run, in
// order, as summarizeRun makes them. Replacing the run by a summary of those
// ids (in L1 or L2) then leaves the id counts unchanged, so the deltas skip
// them: a summary of a summary lists every id it covers, and counting them
// out and in again at every compression step would cost O(history).
func sameIDs(run []*memoryv1.L1Entry, ids []string) bool {
	k := 0
	for _, e := range run {
		if m := e.GetMessage(); m != nil {
			if k >= len(ids) || ids[k] != m.Id {
				return false
			}
			k++
			continue
		}
		sub := e.GetSummary().GetMessageIds()
		if len(ids)-k < len(sub) || !slices.Equal(ids[k:k+len(sub)], sub) {
			return false
		}
		k += len(sub)
	}
	return k == len(ids)
}

// delta is one change to the indexes, recorded while a batch is applied and
// applied to the indexes only when the whole batch has been applied (so a
// failed batch never touches them). Exactly one of the pointers is set.
type delta struct {
	d     int32
	noIDs bool                    // leave the message ids out (see sameIDs)
	entry *memoryv1.L1Entry       // an L1 entry
	l2    *memoryv1.Summary       // an L2 summary
	promo *memoryv1.Message       // a promoted message
	ref   *memoryv1.ToolResultRef // a Kernel tool result ref
}

func (x *indexes) apply(dl delta) {
	switch {
	case dl.entry != nil:
		x.entry(dl.entry, dl.d, dl.noIDs)
	case dl.noIDs:
	case dl.l2 != nil:
		x.summary(dl.l2, dl.d)
	case dl.promo != nil:
		x.id(dl.promo.Id, dl.d)
	case dl.ref != nil:
		x.callID(dl.ref.ToolCallId, dl.d)
	}
}
