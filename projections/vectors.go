package projections

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/swap"
)

// Vector search is optional: with an embeddings endpoint configured, a
// VectorIndexer embeds every BM25 document (message) and keeps the vectors
// in bucketVectors, and SearchOptions.QueryVector fuses a nearest-neighbour
// ranking with the lexical one (reciprocal rank fusion, search_rank.go).
//
// Where the vectors are computed, and why there: beside the projector, in
// the VectorIndexer's own goroutine, never in ApplyBatch. Embedding calls
// the network; inside the projector's write transaction it would hold
// bbolt's only write lock (and the checkpoint, and every read-your-writes
// wait) for as long as the endpoint takes, and a dead endpoint would stop
// the projection. The indexer reads a batch of new documents in a read
// transaction, calls the endpoint with no transaction open, then writes
// the vectors and its cursor in one short write transaction of its own.
//
// Why a bucket and not events: vectors are a cache of an external model,
// large (a 1536-dimension vector is 6 KiB, more than the message), and
// worth nothing once the model changes. In the log they would grow every
// aggregate and every replay; in the projection they are dropped when the
// model changes and rebuilt by embedding again. The price: a Rebuild
// starts without vectors (the indexer embeds everything again, and until
// it has, search fuses what exists: documents without a vector are found
// by BM25 alone), and Digest leaves the bucket out.

// Embedder returns one unit vector per text (internal/embed.Client).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// VectorConfig configures a VectorIndexer.
type VectorConfig struct {
	// Model names the embedder's model. Vectors stored for another model
	// are dropped when the indexer starts.
	Model string
	// Batch is the number of documents per Embed call and write
	// transaction (default 64).
	Batch int
	// Poll is how often an idle indexer without a Projector to wake it
	// looks for new documents (default 1s).
	Poll time.Duration
	// MaxBackoff bounds the wait after a failed Embed call (default 30s;
	// the first wait is 250ms, doubling).
	MaxBackoff time.Duration
}

// VectorIndexer embeds the projection's documents beside the projector.
type VectorIndexer struct {
	cfg    VectorConfig
	store  *Store
	emb    Embedder
	proj   *Projector // optional: wakes the indexer after each commit
	logger *slog.Logger
}

// NewVectorIndexer returns an indexer of store's documents; proj, if not
// nil, wakes it when the projection advances (otherwise it polls).
func NewVectorIndexer(cfg VectorConfig, store *Store, emb Embedder, proj *Projector, logger *slog.Logger) (*VectorIndexer, error) {
	if cfg.Batch == 0 {
		cfg.Batch = 64
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	switch {
	case cfg.Model == "":
		return nil, fmt.Errorf("%w: Model is required", ErrInvalidConfig)
	case cfg.Batch < 1 || cfg.Batch > 4096:
		return nil, fmt.Errorf("%w: Batch: %d not in 1..4096", ErrInvalidConfig, cfg.Batch)
	case cfg.Poll < 0 || cfg.MaxBackoff < 0:
		return nil, fmt.Errorf("%w: Poll and MaxBackoff must be > 0", ErrInvalidConfig)
	case store == nil || emb == nil:
		return nil, fmt.Errorf("%w: store and embedder are required", ErrInvalidConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &VectorIndexer{cfg: cfg, store: store, emb: emb, proj: proj, logger: logger}, nil
}

// Run embeds documents until ctx ends (it then returns nil). A failing
// endpoint is retried with backoff and never stops it; it returns an error
// only when the store fails (closed, corrupt).
func (v *VectorIndexer) Run(ctx context.Context) error {
	if err := v.store.useVectorModel(v.cfg.Model); err != nil {
		return err
	}
	backoff := time.Duration(0)
	for {
		docs, err := v.store.pendingVectorDocs(v.cfg.Batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(docs) == 0 {
			if err := v.idle(ctx); err != nil {
				return nil
			}
			continue
		}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.text
		}
		vecs, err := v.emb.Embed(ctx, texts)
		if err == nil && len(vecs) != len(docs) {
			err = fmt.Errorf("embedder answered %d vectors for %d texts", len(vecs), len(docs))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), v.cfg.MaxBackoff)
			v.logger.Warn("embedding failed; retrying", "docs", len(docs), "first_doc", docs[0].docID, "backoff", backoff, "err", err)
			if sleep(ctx, backoff) != nil {
				return nil
			}
			continue
		}
		backoff = 0
		if err := v.store.putVectors(v.cfg.Model, docs, vecs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// idle waits for the projection to advance (or a poll period).
func (v *VectorIndexer) idle(ctx context.Context) error {
	if v.proj == nil {
		return sleep(ctx, v.cfg.Poll)
	}
	wctx, cancel := context.WithTimeout(ctx, v.cfg.Poll)
	defer cancel()
	_ = v.proj.waitFor(wctx, v.store.AppliedSeq()+1, false)
	return ctx.Err()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// vectorDoc is a document waiting for its vector.
type vectorDoc struct {
	docID           uint64
	userKey, sessID string
	text            string
}

// errVectorModel is returned by putVectors when the stored model changed
// under the indexer (another indexer with another model).
var errVectorModel = errors.New("projections: vectors model changed")

// useVectorModel makes model the model of the vectors bucket: if another
// model's vectors are stored, they are deleted and the cursor reset.
func (s *Store) useVectorModel(model string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		s.limitGrowth(tx)
		meta := tx.Bucket(bucketMeta)
		if bytes.Equal(meta.Get(metaVectorsModel), []byte(model)) {
			return nil
		}
		if err := tx.DeleteBucket(bucketVectors); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketVectors); err != nil {
			return err
		}
		if err := meta.Put(metaVectorsCursor, u64(0)); err != nil {
			return err
		}
		return meta.Put(metaVectorsModel, []byte(model))
	})
}

// pendingVectorDocs returns up to n documents after the vectors cursor, in
// doc id order, with the text to embed: "name: content", or the content
// when the message has no name.
func (s *Store) pendingVectorDocs(n int) ([]vectorDoc, error) {
	var out []vectorDoc
	err := s.view(func(tx *bolt.Tx) error {
		cursor := getU64(tx.Bucket(bucketMeta), metaVectorsCursor)
		users := map[string]string{} // session id → user key
		msgs := tx.Bucket(bucketSwapMessages)
		c := tx.Bucket(bucketBM25Docs).Cursor()
		for k, v := c.Seek(u64(cursor + 1)); k != nil && len(out) < n; k, v = c.Next() {
			_, seq, sid, err := parseDocValue(v)
			if err != nil {
				return err
			}
			if seq == summaryDocMark {
				continue // summaries are searched lexically only (summaries.go)
			}
			user, ok := users[sid]
			if !ok {
				e, err := getSession(tx, sid)
				if err != nil {
					return err
				}
				if e == nil {
					return fmt.Errorf("projections: bm25 doc %d of unknown session %s", beU64(k), sid)
				}
				user = e.GetUserId()
				users[sid] = user
			}
			m, err := getMessage(msgs, sid, seq)
			if err != nil {
				return err
			}
			if m == nil {
				return fmt.Errorf("projections: bm25 doc %d points to missing message %s/%d", beU64(k), sid, seq)
			}
			text := m.GetContent()
			if name := m.GetName(); name != "" {
				text = name + ": " + text
			}
			out = append(out, vectorDoc{docID: beU64(k), userKey: user, sessID: sid, text: text})
		}
		return nil
	})
	return out, err
}

// putVectors stores the vectors of docs and advances the cursor to the
// last of them, in one transaction, if model is still the stored model.
func (s *Store) putVectors(model string, docs []vectorDoc, vecs [][]float32) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		s.limitGrowth(tx)
		meta := tx.Bucket(bucketMeta)
		if !bytes.Equal(meta.Get(metaVectorsModel), []byte(model)) {
			return errVectorModel
		}
		b := tx.Bucket(bucketVectors)
		for i, d := range docs {
			if err := b.Put(vectorKey(d.userKey, d.sessID, d.docID), vectorValue(vecs[i])); err != nil {
				return err
			}
		}
		return meta.Put(metaVectorsCursor, u64(docs[len(docs)-1].docID))
	})
}

// VectorStats reports the vectors' model, how many documents have one and
// the last document dealt with (the indexer's cursor).
func (s *Store) VectorStats() (model string, vectors int, cursor uint64, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		model = string(meta.Get(metaVectorsModel))
		cursor = getU64(meta, metaVectorsCursor)
		vectors = tx.Bucket(bucketVectors).Stats().KeyN
		return nil
	})
	return model, vectors, cursor, err
}

// vectorTop returns the k documents of the user (or of the filter's
// session; never of the except session) whose vectors are nearest to q (dot product of unit vectors:
// cosine), best first. Vectors of another dimension are skipped. It is a
// scan of the user's vectors: no approximate index.
func (r *ranker) vectorTop(b *bolt.Bucket, q []float32, k int) *swap.TopK {
	top := r.newTop(k)
	p := vectorPrefix(r.userKey, string(r.filter))
	var skip []byte // the session left out (ranker.except)
	if r.except != nil {
		skip = vectorPrefix(r.userKey, string(r.except))
	}
	c := b.Cursor()
	for key, v := c.Seek(p); key != nil && bytes.HasPrefix(key, p); key, v = c.Next() {
		if len(v) != 4*len(q) || len(key) < 8 || (skip != nil && bytes.HasPrefix(key, skip)) {
			continue
		}
		top.Offer(swap.Hit{DocID: beU64(key[len(key)-8:]), Score: dotVector(q, v)})
	}
	return top
}
