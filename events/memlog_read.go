package events

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// Bounds implements StreamReader.
func (l *MemLog) Bounds(ctx context.Context) (Bounds, error) {
	if err := ctx.Err(); err != nil {
		return Bounds{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.boundsLocked(), nil
}

func (l *MemLog) boundsLocked() Bounds {
	b := Bounds{First: l.seq + 1, Last: l.seq, Msgs: uint64(len(l.all))}
	if len(l.all) > 0 {
		b.First = l.all[0].Seq
	}
	return b
}

// MissingSeqs implements GapLister.
func (l *MemLog) MissingSeqs(ctx context.Context, limit int) ([]uint64, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.missingLocked(limit)
}

func (l *MemLog) missingLocked(limit int) ([]uint64, bool, error) {
	if l.boundsLocked().Missing() > uint64(limit) {
		return nil, false, nil
	}
	var out []uint64
	for i := 1; i < len(l.all); i++ {
		for s := l.all[i-1].Seq + 1; s < l.all[i].Seq; s++ {
			out = append(out, s)
		}
	}
	return out, true, nil
}

// DeleteMsg removes the message at seq, as JetStream's delete of one
// message does: a gap (or a moved first sequence). Tests and tools only.
func (l *MemLog) DeleteMsg(seq uint64) error {
	return l.remove(func(r Record) bool { return r.Seq == seq })
}

// PurgeBefore removes every message below seq, as JetStream's purge up to
// a sequence does: the first sequence moves to seq (or past it, to the
// next message held). Tests and tools only.
func (l *MemLog) PurgeBefore(seq uint64) error {
	return l.remove(func(r Record) bool { return r.Seq < seq })
}

// remove drops the records drop selects. The slices are replaced, never
// changed in place: Load reads them unlocked.
func (l *MemLog) remove(drop func(Record) bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.all)
	l.all = slices.DeleteFunc(slices.Clone(l.all), drop)
	if len(l.all) == n {
		return fmt.Errorf("events: no message to remove")
	}
	for subj, recs := range l.subjects {
		l.subjects[subj] = slices.DeleteFunc(slices.Clone(recs), drop)
	}
	return nil
}

// Read implements StreamReader.
func (l *MemLog) Read(ctx context.Context, from uint64, opts ...ReadOption) (Cursor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := applyReadOptions(opts)
	return &memCursor{l: l, ctx: ctx, next: max(from, 1), stop: o.stop, subjects: o.subjects, closed: make(chan struct{})}, nil
}

// memCursor is MemLog's Cursor.
type memCursor struct {
	l    *MemLog
	ctx  context.Context // the Read's
	next uint64          // the least sequence Next may return; only Next uses it
	stop uint64
	// subjects filters the records (WithSubjects).
	subjects string
	once     sync.Once
	closed   chan struct{}
}

func (c *memCursor) Next(ctx context.Context) (Record, error) {
	for {
		select {
		case <-c.closed:
			return Record{}, fmt.Errorf("events: read closed")
		default:
		}
		if err := c.ctx.Err(); err != nil {
			return Record{}, fmt.Errorf("events: read: %w", err)
		}
		if c.stop > 0 && c.next > c.stop {
			return Record{}, ErrEndOfRead
		}
		c.l.mu.Lock()
		all, changed, last := c.l.all, c.l.changed, c.l.seq
		c.l.mu.Unlock()
		if i, _ := slices.BinarySearchFunc(all, c.next, func(r Record, s uint64) int { return cmp.Compare(r.Seq, s) }); i < len(all) {
			r := all[i]
			if c.stop > 0 && r.Seq > c.stop {
				c.next = c.stop + 1
				return Record{}, ErrEndOfRead
			}
			c.next = r.Seq + 1
			if !subjectMatches(c.subjects, r.Subject) {
				continue
			}
			r.Data = slices.Clone(r.Data)
			return r, nil
		}
		if c.stop > 0 && c.stop <= last {
			return Record{}, ErrEndOfRead // appends come after the last sequence, past the stop
		}
		select {
		case <-changed:
		case <-c.closed:
		case <-c.ctx.Done():
		case <-ctx.Done():
			return Record{}, fmt.Errorf("events: read: %w", ctx.Err())
		}
	}
}

func (c *memCursor) Close() { c.once.Do(func() { close(c.closed) }) }
