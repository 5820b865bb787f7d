package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Watch filters. A filter is a subject of the log stream; each aggregate is
// one subject, so a filter names one aggregate or, with WatchAll, all.
const WatchAll = events.SubjectPrefix + ".>"

// WatchSession is the filter of session id's changes.
func WatchSession(id string) string { return events.SessionSubject(id) }

// WatchAgent is the filter of agent id's private entries.
func WatchAgent(id string) string { return events.AgentSubject(id) }

// WatchScope is the filter of scope kind/id ("workflow", "w1").
func WatchScope(kind, id string) string { return events.ScopeSubject(kind, id) }

// watchPullMax is how many messages a watch fetches ahead of its reader.
// The server sends no more until the reader took them: a slow reader slows
// the consumer, nothing is dropped.
const watchPullMax = 64

// deleteTimeout bounds the best-effort deletion of a stopped watch's consumer.
const deleteTimeout = 2 * time.Second

// Change is one stored command's effect on one aggregate, decoded.
type Change struct {
	// Seq is the stream sequence of the command's message (with the log in
	// partitions: of its partition's stream, Partition).
	Seq uint64
	// Subject is the aggregate's subject, mem.ev.<kind>.<id>, whatever
	// stream it was read from.
	Subject string
	// Partition is the log partition the change was read from (0 for a log
	// in one stream).
	Partition int
	// Position is Seq in Partition as a position list names it
	// (k<K>:p<i>:<seq>): merge those of the changes handled
	// (consistency.Merge) and pass them to WatchResume to go on after them.
	Position string
	// Kind and ID name the aggregate ("session", "s1"; "agent", "a1"; "workflow", "w1").
	Kind, ID string
	// Version is the aggregate's version after the command.
	Version   uint64
	Time      time.Time
	CommandID string
	// Events are the decoded events, in order. Every *memoryv1.EntryChanged
	// carries its original value (Compressed false), never zstd bytes.
	Events []proto.Message
}

// WatchOption adjusts one Watch call.
type WatchOption func(*watchConfig)

type watchConfig struct {
	stream     string
	partitions int
	resume     string
}

// WatchStream reads the log from stream name instead of events.StreamName
// (a node started with another --stream).
func WatchStream(name string) WatchOption { return func(c *watchConfig) { c.stream = name } }

// WatchPartitions reads a log in k partitions (a node started with
// --log-partitions k). A filter naming one aggregate (WatchSession,
// WatchAgent, WatchScope) reads the stream of its partition
// (<stream>_P<i>), and fromSeq and Change.Seq are sequences of that
// stream. A filter across aggregates (WatchAll, a kind's wildcard) reads
// the k streams side by side: each partition's changes in their order,
// the partitions' interleaved as they come (the streams have no order
// between them); it starts at the beginning, or after the positions of
// WatchResume (fromSeq, one number, names no partition: refused).
func WatchPartitions(k int) WatchOption { return func(c *watchConfig) { c.partitions = k } }

// WatchResume starts the watch after positions: a list of per-partition
// positions as Change.Position writes them ("k6:p0:12,k6:p3:40", merged
// with consistency.Merge), each partition's stream read after its
// sequence (from its beginning when the list does not name it). It is
// how a watch across aggregates of a log in partitions resumes; with
// fromSeq it is refused.
func WatchResume(positions string) WatchOption {
	return func(c *watchConfig) { c.resume = positions }
}

// Watch is a running watch; see Client.Watch.
type Watch struct {
	ch chan Change

	mu  sync.Mutex
	err error // guarded by mu; set before ch is closed
}

// Changes delivers the changes in stream order (with the log in
// partitions, in each partition's order). It is closed when the watch
// ends: see Err.
func (w *Watch) Changes() <-chan Change { return w.ch }

// Err is why the watch ended: nil while it runs and after its context
// ended, otherwise the error that stopped it (an undecodable message, a
// consumer failure). Read it after Changes is closed.
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// fail records err as why the watch ended, unless one is recorded.
func (w *Watch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Watch delivers every change on filter with a stream sequence above fromSeq
// (0: from the beginning), in order and decoded, until ctx ends; then it
// stops its goroutines, deletes its consumers and closes Changes.
//
// It reads with JetStream ordered consumers (pull-based): the server sends
// a bounded number of messages ahead of the reader, so a slow reader slows
// the watch and nothing is skipped. To resume, pass the Seq of the last
// change handled (with the log in partitions and a filter across
// aggregates: WatchResume with the merged Positions of the changes
// handled).
//
// Creating the consumers is bounded by ctx's deadline, or the client's
// timeout when ctx has none. Without permission to create a consumer on
// filter (NATS authorization), the server drops the request: Watch fails with
// a timeout and the connection's error handler reports the permissions
// violation.
func (c *Client) Watch(ctx context.Context, filter string, fromSeq uint64, opts ...WatchOption) (*Watch, error) {
	cfg := watchConfig{stream: events.StreamName, partitions: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if filter == "" {
		return nil, errors.New("agentmem: watch: empty filter")
	}
	reads, err := cfg.route(filter, fromSeq)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("agentmem: watch: %w", err)
	}
	cctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	for i := range reads {
		if err := reads[i].open(cctx, js, filter); err != nil {
			for _, r := range reads[:i] {
				r.it.Stop()
				deleteConsumer(js, r.stream, r.cons)
			}
			return nil, err
		}
	}
	w := &Watch{ch: make(chan Change)}
	go w.run(ctx, js, reads, cfg.partitions)
	return w, nil
}

// streamRead is what a watch reads of one stream: its subjects stored
// as filter, from after sequence from, and the partition it is (0 for a
// log in one stream).
type streamRead struct {
	stream, stored string
	part           int
	from           uint64
	cons           jetstream.Consumer
	it             jetstream.MessagesContext
}

// open creates r's consumer and its iterator.
func (r *streamRead) open(ctx context.Context, js jetstream.JetStream, filter string) error {
	ccfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{r.stored},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if r.from > 0 {
		ccfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		ccfg.OptStartSeq = r.from + 1
	}
	cons, err := js.OrderedConsumer(ctx, r.stream, ccfg)
	if err != nil {
		return fmt.Errorf("agentmem: watch %s on %s: %w", filter, r.stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(watchPullMax))
	if err != nil {
		deleteConsumer(js, r.stream, cons)
		return fmt.Errorf("agentmem: watch %s on %s: %w", filter, r.stream, err)
	}
	r.cons, r.it = cons, it
	return nil
}

// route returns the streams a watch on filter reads from after fromSeq
// (or the resume positions): one, or with the log in partitions and a
// filter across aggregates, every partition's.
func (cfg watchConfig) route(filter string, fromSeq uint64) ([]streamRead, error) {
	k := cfg.partitions
	if k != 1 {
		if err := events.ValidatePartitions("WatchPartitions", k); err != nil {
			return nil, fmt.Errorf("agentmem: watch: %w", err)
		}
	}
	var after []uint64 // per partition, from WatchResume
	if cfg.resume != "" {
		if fromSeq > 0 {
			return nil, fmt.Errorf("agentmem: watch %s: both fromSeq %d and WatchResume given: pass one", filter, fromSeq)
		}
		set, err := consistency.Parse(cfg.resume, k)
		if err != nil {
			return nil, fmt.Errorf("agentmem: watch %s: WatchResume: %w", filter, err)
		}
		after = set.Seqs
	}
	at := func(part int) uint64 {
		if after != nil {
			return after[part]
		}
		return fromSeq
	}
	if k == 1 {
		return []streamRead{{stream: cfg.stream, stored: filter, from: at(0)}}, nil
	}
	if part, err := events.SubjectPartition(filter, k); err == nil {
		return []streamRead{{stream: events.PartitionStream(cfg.stream, part, k), stored: events.StoredSubject(filter, part, k), part: part, from: at(part)}}, nil
	}
	if fromSeq > 0 {
		return nil, fmt.Errorf("agentmem: watch %s: with the log in %d partitions a watch across aggregates reads %d streams, and fromSeq %d names no partition: resume with WatchResume and the merged Positions of the changes handled",
			filter, k, k, fromSeq)
	}
	reads := make([]streamRead, k)
	for i := range reads {
		reads[i] = streamRead{stream: events.PartitionStream(cfg.stream, i, k), stored: events.StoredSubject(filter, i, k), part: i, from: at(i)}
	}
	return reads, nil
}

// run runs one goroutine per stream read; when they all stopped it
// closes Changes. The first error stops the others.
func (w *Watch) run(ctx context.Context, js jetstream.JetStream, reads []streamRead, k int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range reads {
		wg.Go(func() {
			if err := w.pump(ctx, js, r, k); err != nil {
				w.fail(err)
				cancel()
			}
		})
	}
	wg.Wait()
	close(w.ch)
}

// pump delivers r's changes until ctx ends or reading fails; then it
// stops r's iterator and deletes its consumer.
func (w *Watch) pump(ctx context.Context, js jetstream.JetStream, r streamRead, k int) error {
	codec := events.NewCodec()
	err := func() error {
		for {
			msg, err := r.it.Next(jetstream.NextContext(ctx))
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("agentmem: watch %s: %w", r.stream, err)
			}
			md, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("agentmem: watch: message on %s without metadata: %w", msg.Subject(), err)
			}
			b, err := events.DecodeBatch(msg.Data())
			if err != nil {
				return fmt.Errorf("agentmem: watch: %s sequence %d: %w", msg.Subject(), md.Sequence.Stream, err)
			}
			ch, err := decodeChange(codec, md.Sequence.Stream, logicalSubject(msg.Subject()), b)
			if err != nil {
				return err
			}
			ch.Partition = r.part
			ch.Position = consistency.Format(k, r.part, ch.Seq)
			select {
			case w.ch <- ch:
			case <-ctx.Done():
				return nil
			}
		}
	}()
	// Stop ends the iterator's goroutines (they return on its done channel).
	// Its Closed channel is not waited for: for Messages iterators nats.go
	// closes it only when Closed is called after the unsubscribe.
	r.it.Stop()
	deleteConsumer(js, r.stream, r.cons)
	return err
}

// deleteConsumer removes the watch's consumer at once rather than after its
// inactivity threshold. It is best effort: a worker without permission to
// delete leaves the consumer to expire.
func deleteConsumer(js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, info.Name)
}

// logicalSubject is subject without its partition token
// (mem.ev.p3.session.a: mem.ev.session.a).
func logicalSubject(subject string) string {
	if p, kind, id, err := events.ParseStoredSubject(subject); err == nil && p >= 0 {
		return events.SubjectPrefix + "." + kind + "." + id
	}
	return subject
}

// decodeChange decodes the batch b stored at seq on subject.
func decodeChange(codec *events.Codec, seq uint64, subject string, b *memoryv1.EventBatch) (Change, error) {
	fail := func(err error) (Change, error) {
		return Change{}, fmt.Errorf("agentmem: watch: %s sequence %d: %w", subject, seq, err)
	}
	evs, err := codec.Unpack(b)
	if err != nil {
		return fail(err)
	}
	for i, ev := range evs {
		if ec, ok := ev.(*memoryv1.EntryChanged); ok && ec.GetEntry().GetCompressed() {
			if err := inflate(ec.GetEntry()); err != nil {
				return fail(fmt.Errorf("event %d: entry %q: %w", i, ec.GetEntry().GetKey(), err))
			}
		}
	}
	return Change{
		Seq:       seq,
		Subject:   subject,
		Kind:      b.GetAggregateKind(),
		ID:        b.GetAggregateId(),
		Version:   b.GetVersion(),
		Time:      time.Unix(0, b.GetTimeUnixNano()),
		CommandID: b.GetCommandId(),
		Events:    evs,
	}, nil
}

// errSize is returned (wrapped) when a compressed value does not inflate to
// exactly its recorded size.
var errSize = errors.New("decompressed size differs from entry size")

// inflate replaces e's zstd value with the original bytes. It never produces
// more than e.Size bytes: a value that inflates to more or less is an error.
func inflate(e *memoryv1.Entry) error {
	dec, err := zstd.NewReader(bytes.NewReader(e.GetValue()),
		zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	defer dec.Close()
	out := make([]byte, e.GetSize())
	if _, err := io.ReadFull(dec, out); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: shorter than %d bytes", errSize, e.GetSize())
		}
		return fmt.Errorf("zstd: %w", err)
	}
	var one [1]byte
	if n, err := dec.Read(one[:]); n > 0 {
		return fmt.Errorf("%w: longer than %d bytes", errSize, e.GetSize())
	} else if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("zstd: %w", err)
	}
	e.Value, e.Compressed = out, false
	return nil
}
