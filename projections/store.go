package projections

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

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
	// partApplied are the checkpoints of log partitions 1.. (partitions.go;
	// partition 0's is applied), logPartitions the file's partition count.
	partApplied   [events.MaxLogPartitions]atomic.Uint64
	logPartitions atomic.Int64

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool

	// room bounds the file's growth (growth.go); nil: no bound.
	room RoomFunc
	step int // the file's growth step beyond what a commit needs
	// maxSize > 0 caps the file's size whatever the room (set under the
	// writer lock; tests use it to make the file unable to grow).
	maxSize int

	// keySums: each scope's key digests, read by EntryKey (keysum.go).
	keySums keySums

	// corpus, when set, is the one corpus partition the store applies
	// (corpus.go); set at Open from the file, or by SetCorpusPartition
	// before the projector starts.
	corpus *corpusFilter
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
	// Grow in small steps (growth.go); Rebuild's file keeps bbolt's 16 MiB
	// (fewer truncate+fsync rounds while it fills).
	step := growStep
	if noSync {
		step = 16 << 20 // bbolt's default
	}
	db.AllocSize = step
	s := &Store{db: db, path: path, step: step}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := initSchema(tx); err != nil {
			return err
		}
		s.applied.Store(getU64(tx.Bucket(bucketMeta), metaCheckpoint))
		s.loadPartitions(tx)
		s.loadCorpus(tx)
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	}
	return s, nil
}

// Path is the file the store was opened on.
func (s *Store) Path() string { return s.path }

// HoldWrites blocks every write to the file (the projector commits
// nothing: its checkpoints stay where they are) until release is called;
// reads go on. It is for tests that need a projection behind its log.
func (s *Store) HoldWrites() (release func(), err error) {
	tx, err := s.db.Begin(true)
	if err != nil {
		return nil, fmt.Errorf("projections: hold writes: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = tx.Rollback() }) }, nil
}

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

// writer applies records inside one write transaction. Session entries are
// cached and written once at flush.
type writer struct {
	tx       *bolt.Tx
	sessions map[string]*memoryv1.SessionIndexEntry
	dirty    []string // session ids to write, in first-touch order
	isDirty  map[string]bool

	pending    bm25Pending          // postings and df buffered until flush (search.go)
	entries    entryPending         // the scope entries' index, buffered until flush (entries_pending.go)
	keys       keyChanges           // the scopes' keys added and dropped, for EntryKey's digests (keysum.go)
	statsDelta map[string][2]uint64 // user_key → documents, length added in this transaction

	// swap_messages, swap_ids and commands Puts, written in key order at
	// flush (sortedput.go).
	messages, ids, commands sortedPuts
	// prep holds the encoded bytes and term frequencies of messages,
	// computed ahead by Rebuild's reader goroutine (rebuild.go); nil
	// otherwise.
	prep map[*memoryv1.Message]*preparedMessage
	// preIndexed: Rebuild's index stage buffered the postings of the
	// messages applied (rebuild_index.go); index only writes their
	// documents, checking the doc ids it assigned.
	preIndexed bool

	bSessions, bByUser, bByAgent     *bolt.Bucket
	bMessages, bIDs, bSummaries      *bolt.Bucket
	bDocs, bPostings, bTerms, bStats *bolt.Bucket
	bCommands                        *bolt.Bucket

	// corpus: a partial store's partition (corpus.go); nil: every record.
	corpus *corpusFilter
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

// sortAheadMin is the number of buffered swap_messages, swap_ids and
// commands Puts from which flush sorts them in another goroutine while it
// writes the BM25 index (a Rebuild chunk; a live transaction holds far
// fewer, and sorts them in line).
const sortAheadMin = 8192

func (w *writer) flush() error {
	var wg sync.WaitGroup
	if len(w.messages.kvs)+len(w.ids.kvs)+len(w.commands.kvs) >= sortAheadMin {
		wg.Go(func() {
			w.messages.sort()
			w.ids.sort()
			w.commands.sort()
		})
	}
	err := w.flushBM25()
	if err == nil {
		err = w.entries.flush(w.tx.Bucket(bucketEntryPostings), w.tx.Bucket(bucketEntryTerms), w.tx.Bucket(bucketEntryStats))
	}
	wg.Wait() // the sorts are done before the writer touches the Puts again, error or not
	if err != nil {
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
		if err := w.archiveSummaries(e, ev); err != nil {
			return nil, err
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
