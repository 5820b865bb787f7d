package inspector

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// batchRef is one stored batch of a session, as little as paging needs: a
// timeline page or a conversation page is found in the index, then only
// its own batches are read and decoded. A 5,000-turn session's index is a
// few hundred kilobytes; rendering every batch was megabytes per load.
type batchRef struct {
	Seq   uint64 // the stream sequence
	Kind  string // the batch's main kind (kindOfBatch)
	Kinds uint16 // every kind of its events (kindMask)
	// First and Last are the message ordinals the batch appended (0: none).
	First, Last uint64
	// Turn is the turn of its first message, and Users marks its user
	// messages (bit k: message First+k), for a batch of at most 64
	// messages (Turn 0 for a longer one): a message's turn without reading
	// the batch again (turnOf).
	Turn  uint32
	Users uint64
}

// turnOf returns the turn of message ordinal o of the batch (false: not
// known without reading it).
func (r batchRef) turnOf(o uint64) (uint32, bool) {
	if r.Turn == 0 || o < r.First || o > r.Last {
		return 0, false
	}
	k := o - r.First
	// The users after the first message, up to o, each start a turn.
	return r.Turn + uint32(bits.OnesCount64(r.Users&(uint64(1)<<k<<1-1)&^1)), true
}

// sessionIndex is one session's batches in log order, read up to Read
// (the last stream sequence read for it).
type sessionIndex struct {
	mu        sync.Mutex
	refs      []batchRef
	read      uint64
	truncated bool
	where     whereNow
	// created is the session's creation time: a session erased and
	// created again under its id starts a new index.
	created int64
	// held is len(refs) as of the last read (indexes.bound reads it
	// without the index's lock, which a long read of the log holds).
	held atomic.Int64
}

// indexes caches the sessions' batch indexes: the first page of a session
// reads its batches once (kinds and message ordinals only), later pages
// and live updates read only what was stored since. The cache is bounded
// by sessions (maxIndexes) and by batches (maxIndexedBatches, a batch's
// reference is ~64 bytes): the oldest used are dropped first, and read
// again when asked.
type indexes struct {
	mu  sync.Mutex
	m   map[string]*sessionIndex
	use map[string]uint64
	n   uint64
	// dropped is the batches of the index dropOldest dropped last.
	dropped int
}

const maxIndexes = 64

// maxIndexedBatches bounds the batches the cached indexes hold together
// (~32 MiB): sessions grow, and a count of sessions alone let long ones
// take the heap (64 sessions of Config.MaxTimeline batches each). The
// index asked for is kept whatever its size (at most MaxTimeline).
var maxIndexedBatches = 512 << 10

func newIndexes() *indexes {
	return &indexes{m: map[string]*sessionIndex{}, use: map[string]uint64{}}
}

func (x *indexes) get(id string) *sessionIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.n++
	if s, ok := x.m[id]; ok {
		x.use[id] = x.n
		x.bound(id)
		return s
	}
	if len(x.m) >= maxIndexes {
		x.dropOldest("")
	}
	s := &sessionIndex{}
	x.m[id], x.use[id] = s, x.n
	x.bound(id)
	return s
}

// bound drops the least recently used indexes but keep's while they hold
// more than maxIndexedBatches batches together. Called with x.mu held.
func (x *indexes) bound(keep string) {
	total := 0
	for _, s := range x.m {
		total += int(s.held.Load())
	}
	for total > maxIndexedBatches && len(x.m) > 1 {
		id := x.dropOldest(keep)
		if id == "" {
			return
		}
		total -= x.dropped
	}
}

// dropOldest forgets the least recently used index but keep's; it returns
// its id ("" when there is none) and sets x.dropped to its batches.
func (x *indexes) dropOldest(keep string) string {
	oldest, at := "", ^uint64(0)
	for k, u := range x.use {
		if k != keep && u < at {
			oldest, at = k, u
		}
	}
	if oldest == "" {
		return ""
	}
	x.dropped = int(x.m[oldest].held.Load())
	delete(x.m, oldest)
	delete(x.use, oldest)
	return oldest
}

// drop forgets a session (erased, or no longer readable).
func (x *indexes) drop(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, id)
	delete(x.use, id)
}

// index asks the API whether the viewer may read the session (its get,
// whose answer it returns), then returns the session's batches up to now,
// read from the log as time travel reads them, and the session's index
// (its where under its lock).
func (in *Inspector) index(ctx context.Context, v *viewer, id string) (*memoryv1.SessionInfo, []batchRef, bool, *sessionIndex, error) {
	info, err := v.c.Get(ctx, id)
	if err != nil {
		in.idx.drop(id)
		return nil, nil, false, nil, err
	}
	s := in.idx.get(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created != info.GetCreatedUnixNano() {
		s.refs, s.read, s.truncated, s.where, s.created = nil, 0, false, whereNow{}, info.GetCreatedUnixNano()
	}
	// Read up to the session's last batch as the session answered: the
	// log beyond holds other sessions' batches only, which a filtered read
	// would still scan.
	stop := info.GetSeq()
	if stop != 0 && s.read >= stop {
		s.held.Store(int64(len(s.refs)))
		return info, s.refs, s.truncated, s, nil
	}
	err = in.readBatches(ctx, v, id, s.read, stop, func(ch *memoryv1.WatchChange) bool {
		s.read = ch.GetSeq()
		if len(s.refs) >= in.cfg.MaxTimeline {
			s.truncated = true
			return false
		}
		s.refs = append(s.refs, refOf(ch.GetSeq(), ch.GetBatch()))
		s.where.apply(ch.GetBatch())
		return true
	})
	if err != nil {
		return nil, nil, false, nil, err
	}
	if r, err := in.sessionReader(id); in.deps.Reader != nil && err == nil && len(s.refs) > 0 {
		// Batches compacted or erased away since: drop their refs.
		if b, err := r.Bounds(ctx); err == nil && b.First > s.refs[0].Seq {
			i := 0
			for i < len(s.refs) && s.refs[i].Seq < b.First {
				i++
			}
			s.refs = append([]batchRef(nil), s.refs[i:]...)
		}
	}
	s.held.Store(int64(len(s.refs)))
	return info, s.refs, s.truncated, s, nil
}

func refOf(seq uint64, b *memoryv1.EventBatch) batchRef {
	r := batchRef{Seq: seq, Kind: kindOfBatch(b), Kinds: kindMask(b)}
	for _, a := range b.GetEvents() {
		if a.MessageName() != messagesAppendedName {
			continue
		}
		ev := &memoryv1.MessagesAppended{}
		if a.UnmarshalTo(ev) != nil {
			continue
		}
		for _, m := range ev.GetMessages() {
			if r.First == 0 {
				r.First, r.Turn = m.GetSeq(), m.GetTurn()
			}
			r.Last = m.GetSeq()
			if k := r.Last - r.First; k < 64 && m.GetRole() == memoryv1.Role_ROLE_USER {
				r.Users |= 1 << k
			}
		}
	}
	if r.First != 0 && r.Last-r.First >= 64 {
		r.Turn, r.Users = 0, 0
	}
	return r
}

var messagesAppendedName = (*memoryv1.MessagesAppended)(nil).ProtoReflect().Descriptor().FullName()

// readBatches calls f with the session's batches after stream sequence
// after, up to stop (0: up to now), until f returns false. With the node's
// log reader it is one bounded read of the session's subject; without,
// the API's watch pages (which check the viewer may read the session).
func (in *Inspector) readBatches(ctx context.Context, v *viewer, id string, after, stop uint64, f func(*memoryv1.WatchChange) bool) error {
	if in.deps.Reader != nil {
		r, err := in.sessionReader(id)
		if err != nil {
			return fmt.Errorf("inspector: read session %s: %w", id, err)
		}
		b, err := r.Bounds(ctx)
		if err != nil {
			return fmt.Errorf("inspector: the log's bounds: %w", err)
		}
		if stop == 0 || stop > b.Last {
			stop = b.Last
		}
		if stop <= after {
			return nil
		}
		cur, err := r.Read(ctx, after+1, events.WithSubjects(events.SessionSubject(id)), events.WithStop(stop), events.WithReadAhead(256))
		if err != nil {
			return fmt.Errorf("inspector: read session %s: %w", id, err)
		}
		defer cur.Close()
		for {
			rec, err := cur.Next(ctx)
			if errors.Is(err, events.ErrEndOfRead) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("inspector: read session %s: %w", id, err)
			}
			batch, err := events.DecodeBatch(rec.Data)
			if err != nil {
				return fmt.Errorf("inspector: session %s seq %d: %w", id, rec.Seq, err)
			}
			if !f(&memoryv1.WatchChange{Seq: rec.Seq, Subject: rec.Subject, Batch: batch}) {
				return nil
			}
		}
	}
	for {
		rep := &memoryv1.WatchReply{}
		if err := request(ctx, v.nc, "mem.v1.session."+id+".watch", &memoryv1.WatchRequest{FromSeq: after, MaxChanges: 256}, rep); err != nil {
			return err
		}
		if len(rep.GetChanges()) == 0 {
			return nil
		}
		for _, ch := range rep.GetChanges() {
			if stop > 0 && ch.GetSeq() > stop {
				return nil
			}
			if !f(ch) {
				return nil
			}
		}
		after = rep.GetLastSeq()
	}
}

// batchSeqs returns session id's info and the stream sequence of each of
// its batches, from its index (an error when the log holds none).
func (in *Inspector) batchSeqs(ctx context.Context, v *viewer, id string) (*memoryv1.SessionInfo, []uint64, error) {
	info, refs, _, _, err := in.index(ctx, v, id)
	if err != nil {
		return nil, nil, err
	}
	if len(refs) == 0 {
		return nil, nil, fmt.Errorf("inspector: session %s has no batch in the log", id)
	}
	seqs := make([]uint64, len(refs))
	for i, ref := range refs {
		seqs[i] = ref.Seq
	}
	return info, seqs, nil
}
