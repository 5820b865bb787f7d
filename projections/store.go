package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Decoded is one record of the log, decoded: the stream sequence, the
// subject, the envelope and its unpacked events (in order). Records of
// subjects the store does not project may carry a nil Batch.
type Decoded struct {
	Seq     uint64
	Subject string
	Batch   *memoryv1.EventBatch
	Events  []proto.Message
}

// Store is the read model: one bbolt file holding the sessions index, the
// swap (messages and archived summaries) and the BM25 index, with the
// checkpoint of the log applied so far.
//
// One writer (the projector, or Rebuild) calls ApplyBatch; queries run in
// read transactions and are safe concurrently with it and with each other.
type Store struct {
	db      *bolt.DB
	path    string
	applied atomic.Uint64 // checkpoint, mirrored after each commit

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

// Open opens (creating if needed) the projection file at path. A file
// written with another SchemaVersion is an error wrapping ErrSchemaVersion.
// Open waits at most 5 seconds for the file lock.
func Open(path string) (*Store, error) {
	return openStore(path, false)
}

// openStore opens the file; noSync skips the fsync of each commit (Rebuild:
// the file is thrown away if the run does not finish, and fsynced once at
// the end).
func openStore(path string, noSync bool) (*Store, error) {
	opts := boltOptions()
	// A transaction that grows the file past the mapping remaps it, and each
	// remap copies every node of the transaction out of the old mapping:
	// Rebuild's large transactions would remap several times, and so would
	// the projector's while a new file fills (large scope entries are stored
	// twice, current and version). Address space only; the file is not
	// grown.
	opts.InitialMmapSize = mmapSize
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	}
	db.NoSync = noSync
	var cp uint64
	err = db.Update(func(tx *bolt.Tx) error {
		if err := initSchema(tx); err != nil {
			return err
		}
		cp = getU64(tx.Bucket(bucketMeta), metaCheckpoint)
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	s.applied.Store(cp)
	return s, nil
}

// Path is the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close closes the file. It is idempotent; later calls return the first
// result. Queries and ApplyBatch after Close return ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// sync flushes the file to stable storage (used after a NoSync rebuild).
func (s *Store) sync() error { return s.db.Sync() }

// AppliedSeq is the checkpoint: the last stream sequence whose effects are
// committed (0 for a new file).
func (s *Store) AppliedSeq() uint64 { return s.applied.Load() }

func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// ApplyBatch applies recs, in order, and advances the checkpoint to the last
// one, all in ONE bbolt transaction: either every effect and the checkpoint
// are committed or none is. A record whose Seq is not above the checkpoint
// was applied before and is skipped, so re-reading records after a crash
// has no effect twice (exactly-once effect). Records must come in increasing
// sequence order, as an ordered consumer delivers them.
//
// Sessions, scopes (entries.go) and large data (data.go) are projected;
// records of other subject kinds only advance the checkpoint. A record that
// cannot be applied (unknown event type, event for a missing session,
// message or entry version out of order) fails the whole call with an
// *ApplyError naming it; nothing of the call is committed.
func (s *Store) ApplyBatch(recs []Decoded) error {
	_, err := s.applyBounded(context.Background(), recs, time.Time{})
	return err
}

// applyBounded is ApplyBatch for the projector, bounded in time: once
// deadline has passed (the zero time: never) it takes no further record,
// commits those it went through (applied, or skipped as applied before)
// and returns how many they are, at least one; the caller applies the rest
// in another transaction. When ctx ends it stops between two records and
// returns ctx's error, and the transaction rolls back: nothing of recs is
// committed and the checkpoint stays where it was, so the records are
// applied exactly once when they are read again.
func (s *Store) applyBounded(ctx context.Context, recs []Decoded, deadline time.Time) (int, error) {
	done := 0
	err := s.applyTx("apply batch", func(w *writer, cp *uint64) error {
		for ; done < len(recs); done++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if done > 0 && !deadline.IsZero() && time.Now().After(deadline) {
				break
			}
			if _, err := w.applyRecs(recs[done:done+1], cp); err != nil {
				return err
			}
		}
		return ctx.Err() // once more before the flush and the commit
	})
	if err != nil {
		return 0, err
	}
	return done, nil
}

// applyTx runs fill in ONE write transaction with a writer on it; cp is the
// checkpoint, which fill advances (applyRecs). If it advanced, the writer is
// flushed and the new checkpoint stored with the effects, and AppliedSeq
// mirrors it after the commit. An *ApplyError is returned as is, any other
// error wrapped with what.
func (s *Store) applyTx(what string, fill func(w *writer, cp *uint64) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var cp uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		cp = getU64(meta, metaCheckpoint)
		start := cp
		w := newWriter(tx)
		if err := fill(w, &cp); err != nil {
			return err
		}
		if cp == start {
			return nil
		}
		if err := w.flush(); err != nil {
			return err
		}
		return meta.Put(metaCheckpoint, u64(cp))
	})
	if err != nil {
		var ae *ApplyError
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("projections: %s: %w", what, err)
	}
	s.applied.Store(cp)
	return nil
}

// applyRecs applies the records of recs above the checkpoint *cp, in order,
// advancing *cp to each; it returns how many it applied. A record at or
// below *cp was applied before and is skipped.
func (w *writer) applyRecs(recs []Decoded, cp *uint64) (uint64, error) {
	var n uint64
	for i := range recs {
		r := &recs[i]
		if r.Seq <= *cp {
			continue
		}
		if err := w.apply(r); err != nil {
			return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
		}
		if err := w.indexCommand(r); err != nil {
			return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
		}
		*cp = r.Seq
		n++
	}
	return n, nil
}

// writer applies records inside one write transaction. Session entries are
// cached and written once at flush.
type writer struct {
	tx       *bolt.Tx
	sessions map[string]*memoryv1.SessionIndexEntry
	dirty    []string // session ids to write, in first-touch order
	isDirty  map[string]bool

	pending    bm25Pending          // postings and df buffered until flush (search.go)
	entries    entryPending         // the scope entries' index, buffered until flush (entries_pending.go)
	statsDelta map[string][2]uint64 // user_key → documents, length added in this transaction

	// swap_messages, swap_ids and commands Puts, written in key order at
	// flush (sortedput.go).
	messages, ids, commands sortedPuts
	// prep holds the encoded bytes and term frequencies of messages,
	// computed ahead by Rebuild's reader goroutine (rebuild.go); nil
	// otherwise.
	prep map[*memoryv1.Message]*preparedMessage

	bSessions, bByUser, bByAgent     *bolt.Bucket
	bMessages, bIDs, bSummaries      *bolt.Bucket
	bDocs, bPostings, bTerms, bStats *bolt.Bucket
	bCommands                        *bolt.Bucket
}

func newWriter(tx *bolt.Tx) *writer {
	return &writer{
		tx:         tx,
		sessions:   make(map[string]*memoryv1.SessionIndexEntry),
		isDirty:    make(map[string]bool),
		statsDelta: make(map[string][2]uint64),
		bSessions:  tx.Bucket(bucketSessions),
		bByUser:    tx.Bucket(bucketByUser),
		bByAgent:   tx.Bucket(bucketByAgent),
		bMessages:  tx.Bucket(bucketSwapMessages),
		bIDs:       tx.Bucket(bucketSwapIDs),
		bSummaries: tx.Bucket(bucketSwapSummaries),
		bDocs:      tx.Bucket(bucketBM25Docs),
		bPostings:  tx.Bucket(bucketBM25Postings),
		bTerms:     tx.Bucket(bucketBM25Terms),
		bStats:     tx.Bucket(bucketBM25Stats),
		bCommands:  tx.Bucket(bucketCommands),
	}
}

var marshalOpts = proto.MarshalOptions{Deterministic: true}

// session returns the entry of id (nil if it does not exist).
func (w *writer) session(id string) (*memoryv1.SessionIndexEntry, error) {
	if e, ok := w.sessions[id]; ok {
		return e, nil
	}
	v := w.bSessions.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	e := new(memoryv1.SessionIndexEntry)
	if err := proto.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("stored session %q: %w", id, err)
	}
	w.sessions[id] = e
	return e, nil
}

func (w *writer) flush() error {
	if err := w.flushBM25(); err != nil {
		return err
	}
	if err := w.entries.flush(w.tx.Bucket(bucketEntryPostings), w.tx.Bucket(bucketEntryTerms), w.tx.Bucket(bucketEntryStats)); err != nil {
		return err
	}
	if err := w.messages.flush(w.bMessages); err != nil {
		return err
	}
	if err := w.ids.flush(w.bIDs); err != nil {
		return err
	}
	if err := w.commands.flush(w.bCommands); err != nil {
		return err
	}
	slices.Sort(w.dirty) // key order: cheaper bbolt inserts, same content
	for _, id := range w.dirty {
		v, err := marshalOpts.Marshal(w.sessions[id])
		if err != nil {
			return err
		}
		if err := w.bSessions.Put([]byte(id), v); err != nil {
			return err
		}
	}
	w.dirty = w.dirty[:0]
	clear(w.isDirty)
	return nil
}

func (w *writer) touch(id string, e *memoryv1.SessionIndexEntry) {
	w.sessions[id] = e
	if !w.isDirty[id] {
		w.isDirty[id] = true
		w.dirty = append(w.dirty, id)
	}
}

func (w *writer) apply(r *Decoded) error {
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil {
		return err
	}
	if kind != events.KindSession {
		return w.applyOther(r, kind, id) // scope entries, large data (entries.go, data.go)
	}
	if r.Batch == nil {
		return fmt.Errorf("%w: record without a decoded batch", events.ErrMalformed)
	}
	if a := r.Batch.GetAggregateId(); a != "" && a != id {
		return fmt.Errorf("%w: batch for aggregate %q on the subject of session %q", events.ErrMalformed, a, id)
	}
	now := r.Batch.GetTimeUnixNano()
	e, err := w.session(id)
	if err != nil {
		return err
	}
	for i, ev := range r.Events {
		e, err = w.applyEvent(id, e, ev, now)
		if err != nil {
			return fmt.Errorf("event %d (%T): %w", i, ev, err)
		}
	}
	if e == nil {
		return errors.New("batch does not create the session")
	}
	e.UpdatedUnixNano = now
	e.LastSeq = r.Seq
	w.touch(id, e)
	return nil
}

// applyEvent applies one event of session id to its entry e (nil before
// SessionCreated) and returns the entry.
func (w *writer) applyEvent(id string, e *memoryv1.SessionIndexEntry, ev proto.Message, now int64) (*memoryv1.SessionIndexEntry, error) {
	if c, ok := ev.(*memoryv1.SessionCreated); ok {
		if e != nil {
			return nil, errors.New("session already exists")
		}
		e = &memoryv1.SessionIndexEntry{
			SessionId:       id,
			UserId:          c.GetUserId(),
			App:             c.GetApp(),
			Project:         c.GetProject(),
			AgentId:         c.GetAgentId(),
			Status:          memoryv1.SessionStatus_SESSION_STATUS_CREATED,
			CreatedUnixNano: now,
		}
		if e.UserId != "" {
			if err := w.bByUser.Put(sessionIndexKey(e.UserId, now, id), nil); err != nil {
				return nil, err
			}
		}
		if e.AgentId != "" {
			if err := w.bByAgent.Put(sessionIndexKey(e.AgentId, now, id), nil); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
	if e == nil {
		return nil, errors.New("session does not exist")
	}
	switch ev := ev.(type) {
	case *memoryv1.SessionStatusChanged:
		e.Status = ev.GetTo()
	case *memoryv1.MessagesAppended:
		for _, m := range ev.GetMessages() {
			if err := w.appendMessage(id, e, m); err != nil {
				return nil, err
			}
		}
	case *memoryv1.L1Summarized, *memoryv1.L1Evicted:
		e.Summaries++
	case *memoryv1.L2Archived:
		for _, sum := range ev.GetSummaries() {
			v, err := marshalOpts.Marshal(sum)
			if err != nil {
				return nil, err
			}
			if err := w.bSummaries.Put(swapSummaryKey(id, sum.GetFirstSeq(), sum.GetLastSeq(), sum.GetId()), v); err != nil {
				return nil, err
			}
		}
	case *memoryv1.RomUpdated, *memoryv1.RomActivated, *memoryv1.SummaryReplaced,
		*memoryv1.KernelToolDefined, *memoryv1.KernelToolRemoved, *memoryv1.KernelSchemaCached,
		*memoryv1.KernelFactSet, *memoryv1.KernelFactDeleted,
		*memoryv1.SessionStateSet, *memoryv1.SessionStateDeleted, *memoryv1.SessionStateCleared,
		*memoryv1.MessagesPromoted, *memoryv1.PromotedCleared, *memoryv1.ContextAssembled:
		// Session events with no effect on these read models (the actor's
		// state holds them). Listed so that a new event type is an error
		// until someone decides what it means here.
	default:
		return nil, fmt.Errorf("%w: %T is not a session event this projection knows", events.ErrUnknownEventType, ev)
	}
	return e, nil
}

func (w *writer) appendMessage(id string, e *memoryv1.SessionIndexEntry, m *memoryv1.Message) error {
	if want := e.Messages + 1; m.GetSeq() != want {
		return fmt.Errorf("message seq %d, want %d", m.GetSeq(), want)
	}
	v, err := w.messageBytes(m)
	if err != nil {
		return err
	}
	if err := w.messages.put(swapMessageKey(id, m.GetSeq()), v); err != nil {
		return err
	}
	if m.GetId() != "" {
		if err := w.ids.put(swapIDKey(id, m.GetId()), u64(m.GetSeq())); err != nil {
			return err
		}
	}
	e.Messages++
	return w.index(e.GetUserId(), id, m)
}
