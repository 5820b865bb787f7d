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
}

// WatchStream reads the log from stream name instead of events.StreamName
// (a node started with another --stream).
func WatchStream(name string) WatchOption { return func(c *watchConfig) { c.stream = name } }

// WatchPartitions reads a log in k partitions (a node started with
// --log-partitions k): the watch reads the stream of its aggregate's
// partition (<stream>_P<i>), and fromSeq and Change.Seq are sequences of
// that stream. The filter must name one aggregate (WatchSession,
// WatchAgent, WatchScope): the partitions' streams have no order between
// them, so a watch across aggregates is refused; Follow, through the
// service, needs no option.
func WatchPartitions(k int) WatchOption { return func(c *watchConfig) { c.partitions = k } }

// Watch is a running watch; see Client.Watch.
type Watch struct {
	ch chan Change

	mu  sync.Mutex
	err error // guarded by mu; set before ch is closed
}

// Changes delivers the changes in stream order. It is closed when the watch
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

// Watch delivers every change on filter with a stream sequence above fromSeq
// (0: from the beginning), in order and decoded, until ctx ends; then it
// stops its goroutines, deletes its consumer and closes Changes.
//
// It reads with a JetStream ordered consumer (pull-based): the server sends
// a bounded number of messages ahead of the reader, so a slow reader slows
// the watch and nothing is skipped. To resume, pass the Seq of the last
// change handled.
//
// Creating the consumer is bounded by ctx's deadline, or the client's
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
	stream, stored, part, err := cfg.route(filter)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("agentmem: watch: %w", err)
	}
	ccfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{stored},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if fromSeq > 0 {
		ccfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		ccfg.OptStartSeq = fromSeq + 1
	}
	cctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cons, err := js.OrderedConsumer(cctx, stream, ccfg)
	if err != nil {
		return nil, fmt.Errorf("agentmem: watch %s on %s: %w", filter, stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(watchPullMax))
	if err != nil {
		deleteConsumer(js, stream, cons)
		return nil, fmt.Errorf("agentmem: watch %s on %s: %w", filter, stream, err)
	}
	w := &Watch{ch: make(chan Change)}
	go w.run(ctx, js, stream, part, cons, it)
	return w, nil
}

// route returns the stream a watch on filter reads, the filter as stored
// there and the partition (0 for a log in one stream).
func (cfg watchConfig) route(filter string) (stream, stored string, part int, err error) {
	if cfg.partitions == 1 {
		return cfg.stream, filter, 0, nil
	}
	if err := events.ValidatePartitions("WatchPartitions", cfg.partitions); err != nil {
		return "", "", 0, fmt.Errorf("agentmem: watch: %w", err)
	}
	part, err = events.SubjectPartition(filter, cfg.partitions)
	if err != nil {
		return "", "", 0, fmt.Errorf("agentmem: watch %s: with the log in %d partitions a watch names one aggregate (WatchSession, WatchAgent, WatchScope), each read from its partition's stream; watch each, or Follow through the service: %w",
			filter, cfg.partitions, err)
	}
	return events.PartitionStream(cfg.stream, part, cfg.partitions), events.StoredSubject(filter, part, cfg.partitions), part, nil
}

// run is the watch's one goroutine: it owns the iterator and the consumer.
func (w *Watch) run(ctx context.Context, js jetstream.JetStream, stream string, part int, cons jetstream.Consumer, it jetstream.MessagesContext) {
	defer close(w.ch)
	codec := events.NewCodec()
	err := func() error {
		for {
			msg, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("agentmem: watch %s: %w", stream, err)
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
			ch.Partition = part
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
	it.Stop()
	deleteConsumer(js, stream, cons)
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
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
