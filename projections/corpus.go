package projections

import (
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Corpus partitions: a projection file may hold one corpus partition of
// C instead of the whole log, so that the nodes of a cluster can share
// the indexing work. A corpus is what one search ranks together: a
// user's sessions, their scopes and large data (the user id), or, for
// everything without a user, the shared corpus "". Its partition is
// events.LogPartition(corpus, C), the hash the log and placement use.
//
// Such a store reads every record (all K streams, its checkpoints as
// any store's) but applies only those of its partition's corpora. It
// keeps, for every session and large datum of any corpus, the corpus it
// belongs to (bucket corpus_routes, one key each): a later record of a
// session names only the session, and a node routes a session's reads
// by it. Removals are applied by every store (erasing what it does not
// hold changes nothing), and they drop the routes of what they erase.
// The command index is kept whole in every partial store (one small key
// per command): the actors' retried commands are then recognised by any
// file on the node that owns the actor, which is not the corpus's owner,
// and a hand-over of actors waits for no partition's catch-up.

// ErrCorpusPartition: the file holds another corpus partition than the
// one asked for, or was made from the whole log (or the reverse).
var ErrCorpusPartition = errors.New("projections: the projection holds another corpus partition")

var (
	bucketCorpusRoutes       = []byte("corpus_routes")
	metaCorpusPartitions     = []byte("corpus_partitions")
	metaCorpusPartition      = []byte("corpus_partition")
	routeSession, routeDatum = "s/", "d/"
)

// corpusFilter is the partition a store applies: part of parts.
type corpusFilter struct{ parts, part int }

func (f *corpusFilter) holds(corpus string) bool {
	return events.LogPartition(corpus, f.parts) == f.part
}

// CorpusPartition is the partition of corpus among parts.
func CorpusPartition(corpus string, parts int) int { return events.LogPartition(corpus, parts) }

// SetCorpusPartition makes the store apply only the records of corpus
// partition part of parts (parts ≥ 2), recorded in the file: a file of
// another partition, or one that applied records of the whole log, is
// refused with ErrCorpusPartition. Call it after Open, before the
// projector starts.
func (s *Store) SetCorpusPartition(parts, part int) error {
	if parts < 2 || parts > events.MaxLogPartitions || part < 0 || part >= parts {
		return fmt.Errorf("%w: partition %d of %d", ErrCorpusPartition, part, parts)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		haveParts, havePart := getU64(meta, metaCorpusPartitions), getU64(meta, metaCorpusPartition)
		switch {
		case haveParts == uint64(parts) && havePart == uint64(part):
			return nil
		case haveParts != 0:
			return fmt.Errorf("%w: %s holds corpus partition %d of %d, asked for %d of %d", ErrCorpusPartition, s.path, havePart, haveParts, part, parts)
		case s.appliedAny(meta):
			return fmt.Errorf("%w: %s holds the whole log", ErrCorpusPartition, s.path)
		}
		if _, err := tx.CreateBucketIfNotExists(bucketCorpusRoutes); err != nil {
			return err
		}
		if err := meta.Put(metaCorpusPartitions, u64(uint64(parts))); err != nil {
			return err
		}
		return meta.Put(metaCorpusPartition, u64(uint64(part)))
	})
	if err == nil {
		s.corpus = &corpusFilter{parts: parts, part: part}
	}
	return err
}

// appliedAny reports whether any checkpoint moved.
func (s *Store) appliedAny(meta *bolt.Bucket) bool {
	for i := range max(s.LogPartitions(), 1) {
		if getU64(meta, checkpointKey(i)) > 0 {
			return true
		}
	}
	return false
}

// loadCorpus reads the file's corpus partition, if it holds one.
func (s *Store) loadCorpus(tx *bolt.Tx) {
	meta := tx.Bucket(bucketMeta)
	if parts := getU64(meta, metaCorpusPartitions); parts > 0 {
		s.corpus = &corpusFilter{parts: int(parts), part: int(getU64(meta, metaCorpusPartition))}
	}
}

// CorpusPartitionOf is the store's corpus partition and their number
// (0, 0: the whole log).
func (s *Store) CorpusPartitionOf() (part, parts int) {
	if s.corpus == nil {
		return 0, 0
	}
	return s.corpus.part, s.corpus.parts
}

// SessionCorpus is the corpus (user id, "" without one) of a session of
// any corpus whose creation a partial store applied; ok false when it
// knows of none (not created yet, or erased). A store of the whole log
// answers from its session index.
func (s *Store) SessionCorpus(id string) (corpus string, ok bool, err error) {
	if s.corpus == nil {
		e, found, err := s.Session(id)
		return e.GetUserId(), found, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCorpusRoutes).Get([]byte(routeSession + id))
		corpus, ok = string(v), v != nil
		return nil
	})
	return corpus, ok, err
}

// skips reports whether a partial store leaves r out (another corpus's),
// recording on the way the routes r creates. Removals are never left out.
func (w *writer) skips(r *Decoded) (bool, error) {
	if w.corpus == nil {
		return false, nil
	}
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil {
		return false, err
	}
	routes := w.tx.Bucket(bucketCorpusRoutes)
	var corpus string
	switch {
	case kind == events.KindRemoval:
		return false, w.dropRoutes(r, routes)
	case kind == events.KindSession:
		for _, ev := range r.Events {
			if c, ok := ev.(*memoryv1.SessionCreated); ok {
				if err := routes.Put([]byte(routeSession+id), []byte(c.GetUserId())); err != nil {
					return false, err
				}
			}
		}
		corpus = string(routes.Get([]byte(routeSession + id)))
	case kind == sessionScopeKind:
		corpus = string(routes.Get([]byte(routeSession + id)))
	case kind == string(sharedmem.KindUser):
		corpus = id
	case scopeLogKinds[kind]:
		corpus = "" // shared scopes: the corpus of everything without a user
	case kind == dataKind:
		for _, ev := range r.Events {
			if d, ok := ev.(*memoryv1.DataStored); ok {
				c := ownerCorpus(d.GetRef().GetOwner(), routes)
				if err := routes.Put([]byte(routeDatum+id), []byte(c)); err != nil {
					return false, err
				}
			}
		}
		corpus = string(routes.Get([]byte(routeDatum + id)))
	default:
		return false, nil // a kind no store projects: the checkpoint moves on
	}
	return !w.corpus.holds(corpus), nil
}

// ownerCorpus is the corpus of a large datum's owner ("session:<id>",
// "user:<id>", else the shared corpus).
func ownerCorpus(owner string, routes *bolt.Bucket) string {
	kind, id, _ := strings.Cut(owner, ":")
	switch kind {
	case "session":
		return string(routes.Get([]byte(routeSession + id)))
	case "user":
		return id
	}
	return ""
}

// dropRoutes deletes the routes of the sessions and data a removal erases.
func (w *writer) dropRoutes(r *Decoded, routes *bolt.Bucket) error {
	for _, ev := range r.Events {
		rm, ok := ev.(*memoryv1.LogRemoval)
		if !ok {
			continue
		}
		for _, agg := range rm.GetErased() {
			kind, id, _ := strings.Cut(agg, ".")
			var key string
			switch kind {
			case events.KindSession:
				key = routeSession + id
			case dataKind:
				key = routeDatum + id
			default:
				continue
			}
			if err := routes.Delete([]byte(key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Census counts the sessions and the messages the store holds, and the
// bytes its buckets' pages hold (in use, free pages not counted).
func (s *Store) Census() (sessions, messages int, bytes int64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		sessions = tx.Bucket(bucketSessions).Stats().KeyN
		messages = tx.Bucket(bucketSwapMessages).Stats().KeyN
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			st := b.Stats()
			bytes += int64(st.BranchInuse + st.LeafInuse)
			return nil
		})
	})
	return sessions, messages, bytes, err
}
