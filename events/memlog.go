package events

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemLog is an in-memory Log with the same semantics as the JetStream log
// (stream-wide sequences, per-subject expectations, dedupe by msgID). Its
// dedupe window is unbounded. It is meant for tests and tools.
type MemLog struct {
	now func() time.Time

	mu       sync.Mutex
	seq      uint64              // last stream sequence; guarded by mu
	subjects map[string][]Record // per subject, in sequence order; guarded by mu
	msgIDs   map[string]uint64   // msgID -> sequence; guarded by mu
	all      []Record            // every record held, in sequence order; guarded by mu
	changed  chan struct{}       // closed (and replaced) on each append; guarded by mu
}

var (
	_ Log          = (*MemLog)(nil)
	_ StreamReader = (*MemLog)(nil)
	_ GapLister    = (*MemLog)(nil)
)

// NewMemLog returns an empty in-memory log.
func NewMemLog() *MemLog {
	return &MemLog{
		now:      time.Now,
		subjects: make(map[string][]Record),
		msgIDs:   make(map[string]uint64),
		changed:  make(chan struct{}),
	}
}

// Append implements Log.
func (l *MemLog) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return AppendResult{}, err
	}
	if _, _, err := ParseSubject(subject); err != nil {
		return AppendResult{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.subjects[subject]
	var last uint64
	if n := len(recs); n > 0 {
		last = recs[n-1].Seq
	}
	if last != expectedLastSeq {
		// Same rule as JetStreamLog: a retry whose first attempt was stored is
		// a duplicate, recognised as the message right after the expectation.
		if msgID != "" {
			if i := successor(recs, expectedLastSeq); i < len(recs) && l.msgIDs[msgID] == recs[i].Seq {
				return AppendResult{Seq: recs[i].Seq, Duplicate: true}, nil
			}
		}
		return AppendResult{}, &ConflictError{Subject: subject, Expected: expectedLastSeq}
	}
	if msgID != "" {
		if seq, ok := l.msgIDs[msgID]; ok {
			return AppendResult{Seq: seq, Duplicate: true}, nil
		}
	}
	l.seq++
	rec := Record{Subject: subject, Seq: l.seq, Time: l.now(), Data: slices.Clone(data)}
	l.subjects[subject] = append(recs, rec)
	l.all = append(l.all, rec)
	close(l.changed)
	l.changed = make(chan struct{})
	if msgID != "" {
		l.msgIDs[msgID] = l.seq
	}
	return AppendResult{Seq: l.seq}, nil
}

// successor is the index of the first record of recs with Seq > seq.
func successor(recs []Record, seq uint64) int {
	return sort.Search(len(recs), func(i int) bool { return recs[i].Seq > seq })
}

// Load implements Log.
func (l *MemLog) Load(ctx context.Context, subject string, afterSeq uint64, fn func(Record) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return afterSeq, err
	}
	l.mu.Lock()
	recs := l.subjects[subject]
	tail := recs[successor(recs, afterSeq):] // records are never modified: safe to read unlocked
	l.mu.Unlock()
	done := afterSeq
	for _, r := range tail {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		r.Data = slices.Clone(r.Data)
		if err := fn(r); err != nil {
			return done, err
		}
		done = r.Seq
	}
	return done, nil
}

// LastSeq implements Log.
func (l *MemLog) LastSeq(ctx context.Context, subject string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.subjects[subject]
	if len(recs) == 0 {
		return 0, nil
	}
	return recs[len(recs)-1].Seq, nil
}
