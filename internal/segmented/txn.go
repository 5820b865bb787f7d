package segmented

import (
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// A transaction applies events to the state in place and can be rolled back
// in O(changes). Apply commits it when the whole batch applies; Decide*
// simulate their events in one and always roll it back, so the state is
// left exactly as it was (the Context cache included).
//
// In-place rule: inside a transaction applyEvent may
//
//   - set any field of the top-level SessionSnapshot (saved in header);
//   - append to or reslice L1, L2, Promoted and RecentCommands: appending
//     writes only past the saved lengths, which the saved slices do not
//     see;
//   - overwrite an element of L1 or L2 inside the saved lengths only
//     through setL1/setL2, which record the old element;
//   - replace SessionState, Kernel and Assembled wholesale (copy first,
//     then modify).
//
// It never modifies a message reachable from the snapshot other than the
// top-level SessionSnapshot and those slices, so events, replies and
// snapshots can share nested messages with the state.
type txn struct {
	active  bool
	created bool // there was no session before: roll back to none
	hdr     header
	tok     totals
	marked  []uint64
	slotsL1 []slot[*memoryv1.L1Entry]
	slotsL2 []slot[*memoryv1.Summary]
	// track records deltas for the indexes (Apply with built indexes).
	track  bool
	deltas []delta
}

type slot[T any] struct {
	at  *T
	old T
}

// header is what a transaction may change in the top-level snapshot.
type header struct {
	status          memoryv1.SessionStatus
	version         uint64
	lastSeq         uint64
	rom, pendingRom *memoryv1.Rom
	kernel          *memoryv1.Kernel
	l2              []*memoryv1.Summary
	promoted        []*memoryv1.Message
	l1              []*memoryv1.L1Entry
	sessionState    []*memoryv1.StateEntry
	nextMessageSeq  uint64
	turn            uint32
	totalMessages   uint64
	archivedL2Count uint64
	compressions    uint64
	updatedUnixNano int64
	recentCommands  []*memoryv1.CommandResult
	nextSummarySeq  uint64
	assembled       *memoryv1.Assembled
	lastAppendFirst uint64
}

func saveHeader(p *memoryv1.SessionSnapshot) header {
	return header{
		status: p.Status, version: p.Version, lastSeq: p.LastSeq,
		rom: p.Rom, pendingRom: p.PendingRom, kernel: p.Kernel,
		l2: p.L2, promoted: p.Promoted, l1: p.L1, sessionState: p.SessionState,
		nextMessageSeq: p.NextMessageSeq, turn: p.Turn, totalMessages: p.TotalMessages,
		archivedL2Count: p.ArchivedL2Count, compressions: p.Compressions,
		updatedUnixNano: p.UpdatedUnixNano, recentCommands: p.RecentCommands,
		nextSummarySeq: p.NextSummarySeq, assembled: p.Assembled, lastAppendFirst: p.LastAppendFirstSeq,
	}
}

func (h *header) restore(p *memoryv1.SessionSnapshot) {
	p.Status, p.Version, p.LastSeq = h.status, h.version, h.lastSeq
	p.Rom, p.PendingRom, p.Kernel = h.rom, h.pendingRom, h.kernel
	p.L2, p.Promoted, p.L1, p.SessionState = h.l2, h.promoted, h.l1, h.sessionState
	p.NextMessageSeq, p.Turn, p.TotalMessages = h.nextMessageSeq, h.turn, h.totalMessages
	p.ArchivedL2Count, p.Compressions = h.archivedL2Count, h.compressions
	p.UpdatedUnixNano, p.RecentCommands = h.updatedUnixNano, h.recentCommands
	p.NextSummarySeq, p.Assembled = h.nextSummarySeq, h.assembled
	p.LastAppendFirstSeq = h.lastAppendFirst
}

// begin starts a transaction; track records index deltas (Apply).
func (s *State) begin(track bool) {
	tx := &s.tx
	if tx.active {
		panic("segmented: nested transaction")
	}
	tx.active, tx.track = true, track && s.idx != nil
	tx.created = s.snap == nil
	if !tx.created {
		tx.hdr = saveHeader(s.snap)
	}
	tx.tok, tx.marked = s.tok, s.marked
	s.marksMemo = marksMemo{}
}

// rollback undoes the changes of the transaction, if one is active.
func (s *State) rollback() {
	tx := &s.tx
	if !tx.active {
		return
	}
	for i := len(tx.slotsL1) - 1; i >= 0; i-- {
		*tx.slotsL1[i].at = tx.slotsL1[i].old
	}
	for i := len(tx.slotsL2) - 1; i >= 0; i-- {
		*tx.slotsL2[i].at = tx.slotsL2[i].old
	}
	if tx.created {
		s.snap = nil
	} else {
		tx.hdr.restore(s.snap)
	}

	s.tok, s.marked, s.marksMemo = tx.tok, tx.marked, marksMemo{}
	s.endTx()
}

// commit keeps the changes and brings the indexes up to date.
func (s *State) commit() {
	if s.tx.track {
		for _, dl := range s.tx.deltas {
			s.idx.apply(dl)
		}
	}
	s.endTx()
}

func (s *State) endTx() {
	tx := &s.tx
	clear(tx.slotsL1)
	clear(tx.slotsL2)
	clear(tx.deltas)
	tx.slotsL1, tx.slotsL2, tx.deltas = tx.slotsL1[:0], tx.slotsL2[:0], tx.deltas[:0]
	tx.hdr = header{}
	tx.active, tx.track, tx.created = false, false, false
}

// setL1 sets L1[i], recording the old entry for a rollback.
func (s *State) setL1(i int, e *memoryv1.L1Entry) {
	at := &s.snap.L1[i]
	s.tx.slotsL1 = append(s.tx.slotsL1, slot[*memoryv1.L1Entry]{at, *at})
	*at = e
}

// setL2 sets L2[i], recording the old summary for a rollback.
func (s *State) setL2(i int, sum *memoryv1.Summary) {
	at := &s.snap.L2[i]
	s.tx.slotsL2 = append(s.tx.slotsL2, slot[*memoryv1.Summary]{at, *at})
	*at = sum
}

// track records an index delta (when the transaction tracks them).
func (s *State) track(dl delta) {
	if s.tx.track {
		s.tx.deltas = append(s.tx.deltas, dl)
	}
}
