package projections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Rebuild reads the log in batches of rebuildBatch records (one goroutine
// reads and decodes, workers prepare the messages, an index stage groups
// their postings) and applies them in large transactions (the calling
// goroutine): a transaction ends after
// rebuildChunkRecords records, rebuildChunkBytes bytes of encoded batches or
// rebuildChunkPostings BM25 postings, whichever comes first. Large
// transactions amortize bbolt's commit (spill and write of every dirty page)
// and let flush write the postings and messages of many records in key
// order; the bounds keep the memory of a transaction (buffered postings,
// about 100 bytes each with bbolt's node entries, encoded messages, dirty
// pages) to a few hundred MB at most.
const (
	rebuildBatch         = 256
	rebuildChunkBytes    = 64 << 20
	rebuildChunkPostings = 2 << 20
	// rebuildQueue is the number of read batches buffered between the
	// reader, the workers and the index stage.
	rebuildQueue = 16
	// rebuildQueueItems is the capacity in items of the queue from the
	// index stage to the writer (an item holds at most a read batch);
	// rebuildQueueBytes bounds it first.
	rebuildQueueItems = 4096
)

// rebuildQueueBytes bounds the records queued between the index stage and
// the writer by their encoded size (a variable so that tests can make it
// small): the stage reads and groups the next transaction while the writer
// flushes and commits one. Decoded, prepared and grouped, records take
// several times their encoded size (docs/SCALING.md has the peak RSS
// measured).
var rebuildQueueBytes int64 = 8 << 20

// rebuildChunkRecords: see above (a variable so that tests can cut a small
// log into many chunks).
var rebuildChunkRecords uint64 = 64 << 10

// rebuildFillPercent is the bbolt fill percent of the buckets during
// Rebuild: their inserts are appends (doc ids, message sequences) or runs of
// ascending keys, so pages are filled instead of split in half. It changes
// the page layout only, never the keys and values (Digest).
const rebuildFillPercent = 0.95

// DefaultIdleTimeout is how long Rebuild waits for the next message of the
// log, while sequences up to the last one are still expected, before it
// gives up with the reason (WithIdleTimeout).
const DefaultIdleTimeout = 10 * time.Second

// RebuildOption adjusts one Rebuild call.
type RebuildOption func(*rebuildOptions)

type rebuildOptions struct {
	idle time.Duration
	upTo *uint64 // nil: the stream's last sequence
	// upToParts bounds each partition's stream (RebuildPartitions; nil:
	// each stream's last sequence).
	upToParts []uint64
}

// WithUpTo stops the rebuild at stream sequence seq (or at the stream's
// last, if that comes first): the file is what a projector that applied
// up to seq holds (replay verify compares a lagging projection with it).
func WithUpTo(seq uint64) RebuildOption {
	return func(o *rebuildOptions) { o.upTo = &seq }
}

// WithUpToPartitions is WithUpTo for RebuildPartitions: partition i's
// stream stops at seqs[i] (or at its last sequence, if that comes first);
// seqs has one sequence per partition (Store.AppliedSeqOf of a live file:
// replay verify).
func WithUpToPartitions(seqs []uint64) RebuildOption {
	return func(o *rebuildOptions) { o.upToParts = slices.Clone(seqs) }
}

// WithIdleTimeout sets how long Rebuild waits for the next message of the
// log (DefaultIdleTimeout); d <= 0 keeps the default.
func WithIdleTimeout(d time.Duration) RebuildOption {
	return func(o *rebuildOptions) {
		if d > 0 {
			o.idle = d
		}
	}
}

// RebuildStats describes a finished Rebuild.
type RebuildStats struct {
	// Events is the number of log records (EventBatch messages) applied.
	Events uint64
	// Batches is the number of transactions committed.
	Batches  uint64
	Duration time.Duration
	// LastSeq is the stream sequence the rebuilt file is checkpointed at.
	LastSeq uint64
}

// Rebuild replays the whole stream, up to its last sequence read at the
// start, into a new file path+".rebuild", fsyncs and closes it, and renames
// it over path. A ".rebuild" file left by an interrupted run is removed
// first, so Rebuild is safe to interrupt and to run again.
//
// The rename is atomic on POSIX file systems: a reader opening path sees
// the old file or the new one, never a mix; the directory is fsynced after
// the rename so the swap survives a crash. A Store already open on path
// keeps reading the old (unlinked) file: close it and Open path again. The
// live projector must not run on path while Rebuild runs (bbolt's file lock
// is on the old inode, not on the name).
//
// progress, if not nil, is called after each committed batch with the
// records applied so far and the total to apply.
//
// Rebuild never waits forever: a stream that is missing (ErrStreamNotFound),
// no longer starts at sequence 1 (ErrLogTruncated) or misses a sequence
// (ErrLogGap) is refused before anything is written; if it changes while
// Rebuild reads (deleted, purged) or no message arrives for the idle
// timeout (WithIdleTimeout) while sequences are still expected, Rebuild
// ends with the reason (ErrLogStalled when none is found). When ctx ends,
// Rebuild commits no further transaction and returns ctx's error. Nothing
// is renamed over path then.
func Rebuild(ctx context.Context, js jetstream.JetStream, stream, path string, codec *events.Codec,
	progress func(applied, total uint64), opts ...RebuildOption) (RebuildStats, error) {
	cfg := events.DefaultJetStreamConfig()
	cfg.Stream = stream
	log, err := events.OpenJetStreamLog(js, cfg)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("projections: rebuild: %w", err)
	}
	return RebuildLog(ctx, log, stream, path, codec, progress, opts...)
}

// RebuildLog is Rebuild reading the log through r (stream names it in
// errors). The log may miss the sequences its removal ledger lists, a
// moved first sequence included: they were removed on purpose. Any other
// missing sequence is refused (ErrLogTruncated or ErrLogGap).
func RebuildLog(ctx context.Context, r events.StreamReader, stream, path string, codec *events.Codec,
	progress func(applied, total uint64), opts ...RebuildOption) (RebuildStats, error) {
	began := time.Now()
	var stats RebuildStats
	tmp := path + ".rebuild"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return stats, fmt.Errorf("projections: rebuild: remove leftover %s: %w", tmp, err)
	}
	o := rebuildOptions{idle: DefaultIdleTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	last, removed, err := checkLog(ctx, r, stream)
	if err != nil {
		return stats, err
	}
	if o.upTo != nil {
		last = min(last, *o.upTo)
	}
	st, err := openStore(tmp, true)
	if err != nil {
		return stats, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = st.Close()
			_ = os.Remove(tmp)
		}
	}()
	if last > 0 {
		src := rebuildSource{r: r, stream: stream, last: last, removed: removed}
		if err := rebuildFrom(ctx, []rebuildSource{src}, codec, st, o.idle, &stats, progress); err != nil {
			return stats, fmt.Errorf("projections: rebuild %s: %w", path, err)
		}
	}
	stats.LastSeq = st.AppliedSeq()
	ok, err = commitRebuild(st, tmp, path)
	if err != nil {
		return stats, err
	}
	stats.Duration = time.Since(began)
	return stats, nil
}

// readBatch is a batch of decoded records passed from Rebuild's reader to
// its writer, with the encoded size of its batches and the work done ahead
// for its messages.
type readBatch struct {
	part  int // the log partition of recs (rebuildSource.part)
	recs  []Decoded
	ready chan struct{} // closed once prepare has run
	bytes int
	ends  []int // ends[i]: the encoded size of recs[:i+1]
	prep  map[*memoryv1.Message]*preparedMessage
}

// size is the encoded size of b.recs[from:to] (once prepared).
func (b *readBatch) size(from, to int) int64 {
	if to <= from || len(b.ends) < to {
		return 0
	}
	n := b.ends[to-1]
	if from > 0 {
		n -= b.ends[from-1]
	}
	return int64(n)
}

// preparedMessage is what the writer would compute for a message of a
// MessagesAppended event: its deterministic encoding (swap_messages value)
// and its BM25 term frequencies. Both are pure functions of the message, so
// computing them in Rebuild's reader goroutine, in parallel with the
// writer, gives the same bytes.
type preparedMessage struct {
	docID  uint64 // its bm25 document, assigned by the index stage (0: none)
	wire   []byte
	tfs    []swap.TermFreq
	docLen uint32
	fields []string
}

// prepare computes the preparedMessage of every message appended by the
// session records of b. A message that fails to encode is left out: the
// writer encodes it again and fails on its record.
func (b *readBatch) prepare() {
	b.ends = make([]int, len(b.recs))
	for i := range b.recs {
		r := &b.recs[i]
		if r.Batch != nil {
			b.bytes += proto.Size(r.Batch)
		}
		b.ends[i] = b.bytes
		if r.Batch == nil {
			continue
		}
		for _, ev := range r.Events {
			ma, ok := ev.(*memoryv1.MessagesAppended)
			if !ok {
				continue
			}
			for _, m := range ma.GetMessages() {
				wire, err := marshalOpts.Marshal(m)
				if err != nil {
					continue
				}
				p := &preparedMessage{wire: wire}
				p.tfs, p.docLen = termFreqs(m.GetContent())
				p.fields = fieldTerms(m)
				if b.prep == nil {
					b.prep = make(map[*memoryv1.Message]*preparedMessage)
				}
				b.prep[m] = p
			}
		}
	}
}

// messageBytes is the swap_messages value of m.
func (w *writer) messageBytes(m *memoryv1.Message) ([]byte, error) {
	if p := w.prep[m]; p != nil {
		return p.wire, nil
	}
	return marshalOpts.Marshal(m)
}

// termFreqs is termFreqs of m's content.
func (w *writer) termFreqs(m *memoryv1.Message) ([]swap.TermFreq, uint32) {
	if p := w.prep[m]; p != nil {
		return p.tfs, p.docLen
	}
	return termFreqs(m.GetContent())
}

// termFreqs is swap.TermFreqs of a message's content, as a list (one
// allocation, no map per message).
func termFreqs(content string) ([]swap.TermFreq, uint32) {
	// About one distinct term per twelve bytes of prose (swap.TermFreqs).
	return swap.AppendTermFreqs(make([]swap.TermFreq, 0, min(len(content)/12+1, 1024)), content)
}

// fieldTerms is fieldTerms(m).
func (w *writer) fieldTerms(m *memoryv1.Message) []string {
	if p := w.prep[m]; p != nil {
		return p.fields
	}
	return fieldTerms(m)
}

// rebuildSource is a log Rebuild replays: sequences 1..last of r (those
// removed lists may be missing), stream names it in errors, into log
// partition part's checkpoint.
type rebuildSource struct {
	r       events.StreamReader
	part    int
	stream  string
	last    uint64
	removed *events.SpanSet
}

// rebuildFrom applies the sources to st, one after the other (last > 0
// each). Four stages run in parallel: a reader goroutine reads and decodes
// the sources in turn, workers prepare the messages of each batch
// (encoding, term frequencies), the index stage cuts the log into
// transactions and groups their postings (indexChunks), and this goroutine
// applies the records, in log order, one transaction at a time
// (applyChunk). The sources go through the one pipeline: the next one is
// read and grouped while the writer flushes and commits the last
// transaction of the one before. As with consume, the records before a
// record that cannot be decoded are committed, then the error is returned.
func rebuildFrom(ctx context.Context, srcs []rebuildSource, codec *events.Codec, st *Store,
	idle time.Duration, stats *RebuildStats, progress func(applied, total uint64)) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var docs uint64
	if err := st.view(func(tx *bolt.Tx) error {
		docs = tx.Bucket(bucketBM25Docs).Sequence()
		return nil
	}); err != nil {
		return err
	}
	var total uint64
	streams := make(map[int]string, len(srcs))
	for _, src := range srcs {
		total += src.last
		streams[src.part] = src.stream
	}
	before := stats.Events
	ch, wait := readPrepared(rctx, srcs, codec, idle)
	chunks := indexChunks(rctx, ch, docs+1)
	var werr error
	for more := true; more; {
		if werr = ctx.Err(); werr != nil {
			break // no further transaction once ctx has ended
		}
		n, part, m, err := st.applyChunk(chunks)
		more = m
		if err != nil {
			var ae *ApplyError
			if errors.As(err, &ae) {
				ae.Stream = streams[part]
			}
			if !errors.Is(err, errChunkCut) {
				werr = err
			} else if werr = ctx.Err(); werr == nil {
				werr = err
			}
			break
		}
		if n > 0 {
			stats.Events += n
			stats.Batches++
			if progress != nil {
				progress(stats.Events-before, total)
			}
		}
	}
	cancel()
	chunks.drain() // unblock the stages if the writer stopped first
	rerr := wait()
	if werr != nil {
		return werr
	}
	if rerr != nil {
		return rerr
	}
	for _, src := range srcs {
		if a := st.AppliedSeqOf(src.part); a < src.last {
			if err := ctx.Err(); err != nil {
				return err // the stages stopped on it, between two transactions
			}
			return fmt.Errorf("%s: read stopped at sequence %d of %d", src.stream, a, src.last)
		}
	}
	return nil
}

// readPrepared starts Rebuild's first two stages: a reader goroutine that
// reads and decodes sequences 1..last of each source in turn, and workers
// that prepare each batch. Batches arrive on the channel in log order
// (wait on ready before use); it is closed when reading ends, and wait
// then returns the reader's error. Cancel ctx to stop early, and drain the
// channel.
func readPrepared(ctx context.Context, srcs []rebuildSource, codec *events.Codec, idle time.Duration) (<-chan *readBatch, func() error) {
	ch := make(chan *readBatch, rebuildQueue)   // in log order, to the writer
	work := make(chan *readBatch, rebuildQueue) // to the workers
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for b := range work {
				b.prepare()
				close(b.ready)
			}
		})
	}
	var rerr error
	wg.Go(func() {
		defer close(work)
		defer close(ch)
		for _, src := range srcs {
			rerr = consume(ctx, src.r, src.stream, codec, 1, src.last, 1, src.removed, rebuildBatch, 0, 50*time.Millisecond, idle, func(recs []Decoded) error {
				// consume reuses recs.
				b := &readBatch{part: src.part, recs: slices.Clone(recs), ready: make(chan struct{})}
				// To the workers first: a batch the writer receives is always
				// prepared (its ready channel closed) eventually.
				for _, c := range []chan *readBatch{work, ch} {
					select {
					case c <- b:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
			if rerr != nil {
				return
			}
		}
	})
	return ch, func() error {
		wg.Wait()
		return rerr
	}
}

// errChunkCut: the index stage stopped (its context ended) in the middle of
// a transaction, which is rolled back.
var errChunkCut = errors.New("rebuild: index stage stopped within a transaction")

// applyChunk applies the records received from items, up to the end of a
// transaction, in ONE transaction together with the checkpoint of their
// log partition (part, from the first item), and returns the records
// applied; more is false once items is closed. It is ApplyBatch's
// transaction (applyTx, applyRecs); for records indexed ahead
// (chunkItem.ahead) the writer takes the postings the stage grouped
// instead of indexing the messages again.
func (s *Store) applyChunk(items *chunkQueue) (n uint64, part int, more bool, err error) {
	first, ok := items.next()
	if !ok {
		return 0, 0, false, nil
	}
	part, more = first.part, true
	err = s.applyTxIn(part, "apply chunk", func(w *writer, cp *uint64) error {
		for _, b := range []*bolt.Bucket{w.bSessions, w.bByUser, w.bByAgent, w.bMessages, w.bIDs, w.bSummaries,
			w.bDocs, w.bPostings, w.bTerms, w.bStats} {
			b.FillPercent = rebuildFillPercent
		}
		for it, ok := first, true; ; it, ok = items.next() {
			if !ok {
				more = false
				return errChunkCut
			}
			if it.part != part {
				return fmt.Errorf("rebuild: records of partition %d in a transaction of partition %d", it.part, part)
			}
			if it.end {
				w.prep, w.preIndexed = nil, false
				if it.pre != nil {
					if w.pending.n != 0 || len(w.statsDelta) != 0 {
						return errors.New("rebuild: postings buffered by the writer in a transaction indexed ahead")
					}
					w.pending, w.statsDelta = it.pre.pending, it.pre.stats
				}
				return nil
			}
			w.prep, w.preIndexed = it.prep, it.ahead
			k, err := w.applyRecs(it.recs, cp)
			n += k
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return 0, part, false, err
	}
	return n, part, more, nil
}

// commitRebuild makes the rebuilt file tmp (st's) the projection at path:
// synced, closed, renamed over path, the directory synced. renamed reports
// whether tmp is path now (the caller's cleanup must then leave it).
func commitRebuild(st *Store, tmp, path string) (renamed bool, err error) {
	if err := st.sync(); err != nil {
		return false, fmt.Errorf("projections: rebuild: sync %s: %w", tmp, err)
	}
	if err := st.Close(); err != nil {
		return false, fmt.Errorf("projections: rebuild: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("projections: rebuild: rename %s over %s: %w", tmp, path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return true, fmt.Errorf("projections: rebuild: sync directory: %w", err)
	}
	return true, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// VerifyDigests compares two Digest results (a live file and a rebuilt one)
// and returns one line per bucket that differs or is missing from either,
// sorted; nil means they hold the same read model.
func VerifyDigests(live, rebuilt map[string]string) []string {
	var out []string
	for name, l := range live {
		r, ok := rebuilt[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: missing from the rebuilt file", name))
		case r != l:
			out = append(out, fmt.Sprintf("%s: differs (live %s, rebuilt %s)", name, short(l), short(r)))
		}
	}
	for name := range rebuilt {
		if _, ok := live[name]; !ok {
			out = append(out, fmt.Sprintf("%s: missing from the live file", name))
		}
	}
	sort.Strings(out)
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
