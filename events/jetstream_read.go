package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

var _ StreamReader = (*JetStreamLog)(nil)
var _ GapLister = (*JetStreamLog)(nil)

// OpenJetStreamLog returns the log on an existing stream without creating
// or updating it (readers and tools: a missing stream stays missing and is
// reported as ErrNoStream by the first call). cfg's Stream and
// RequestTimeout are used.
func OpenJetStreamLog(js jetstream.JetStream, cfg JetStreamConfig) (*JetStreamLog, error) {
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultJetStreamConfig().RequestTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &JetStreamLog{
		js:         js,
		nc:         js.Conn(),
		stream:     cfg.Stream,
		timeout:    cfg.RequestTimeout,
		part:       cfg.part(),
		msgGetSubj: apiPrefix(js.Options()) + "STREAM.MSG.GET." + cfg.Stream,
	}, nil
}

// info is the stream's info (with the list of deleted sequences if
// details); a missing stream wraps ErrNoStream.
func (l *JetStreamLog) info(ctx context.Context, details bool) (*jetstream.StreamInfo, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = s.Info(ctx, jetstream.WithDeletedDetails(details)); err == nil {
			return info, nil
		}
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %s not found (deleted?): %w", ErrNoStream, l.stream, err)
	}
	return nil, fmt.Errorf("events: stream %s info: %w", l.stream, err)
}

// Bounds implements StreamReader: one stream info request.
func (l *JetStreamLog) Bounds(ctx context.Context) (Bounds, error) {
	info, err := l.info(ctx, false)
	if err != nil {
		return Bounds{}, err
	}
	return boundsOf(info), nil
}

func boundsOf(info *jetstream.StreamInfo) Bounds {
	st := info.State
	b := Bounds{First: st.FirstSeq, Last: st.LastSeq, Msgs: st.Msgs}
	if b.Msgs == 0 {
		b.First = b.Last + 1
	}
	return b
}

// MissingSeqs implements GapLister (one stream info request with the
// deleted sequences).
func (l *JetStreamLog) MissingSeqs(ctx context.Context, limit int) ([]uint64, bool, error) {
	info, err := l.info(ctx, false)
	if err != nil {
		return nil, false, err
	}
	if info.State.NumDeleted == 0 {
		return nil, true, nil
	}
	if info.State.NumDeleted > limit {
		return nil, false, nil
	}
	if info, err = l.info(ctx, true); err != nil {
		return nil, false, err
	}
	if len(info.State.Deleted) > limit {
		return nil, false, nil
	}
	return slices.Sorted(slices.Values(info.State.Deleted)), true, nil
}

// Read implements StreamReader with an ordered consumer on every subject of
// the log (mem.ev.>), in memory on the server, starting at from: JetStream
// skips the sequences it no longer holds. Close (or the end of ctx)
// deletes the consumer. A bounded read whose stop was
// already written first asks the leader for the first message at or after
// from, and ends at once if there is none up to the stop; afterwards each
// message's pending count tells when nothing more up to the stop is
// stored.
func (l *JetStreamLog) Read(ctx context.Context, from uint64, opts ...ReadOption) (Cursor, error) {
	o := applyReadOptions(opts)
	from = max(from, 1)
	filter := storedIn(l.part, cmp.Or(o.subjects, SubjectPrefix+".>"))
	written := false // every sequence up to the stop was assigned when the read began
	if o.stop > 0 {
		if from > o.stop {
			return endedCursor{}, nil
		}
		b, err := l.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		if written = o.stop <= b.Last; written {
			gctx, cancel := l.withTimeout(ctx)
			sm, err := l.leaderGet(gctx, msgGetRequest{Seq: from, NextFor: filter})
			cancel()
			if err != nil {
				return nil, err
			}
			if sm == nil || sm.Seq > o.stop {
				return endedCursor{}, nil
			}
			from = sm.Seq
		}
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:   []string{filter},
		DeliverPolicy:    jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:      from,
		MaxResetAttempts: o.maxResets,
	}
	ahead := o.readAhead
	if ahead <= 0 {
		ahead = 256
	}
	rd, err := openOrdered(ctx, l.js, l.stream, cfg, ahead, l.timeout, jetstream.PullHeartbeat(readHeartbeat))
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: read stream %s: not found (deleted?): %w", ErrNoStream, l.stream, err)
		}
		return nil, fmt.Errorf("events: read stream %s from %d: %w", l.stream, from, err)
	}
	c := &jsCursor{stream: l.stream, part: l.part, rd: rd, stop: o.stop, written: written}
	c.left = func(ctx context.Context, after uint64) (bool, error) {
		return l.storedAfter(ctx, filter, after, o.stop)
	}
	// While the ordered consumer recreates itself Next ignores its context;
	// only stopping the read ends it. The end of ctx ends the read as Close
	// does, consumer deleted.
	c.unhook = context.AfterFunc(ctx, rd.stop)
	return c, nil
}

// storedAfter asks the leader whether a message of filter is stored after
// sequence after, up to stop.
func (l *JetStreamLog) storedAfter(ctx context.Context, filter string, after, stop uint64) (bool, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	sm, err := l.leaderGet(ctx, msgGetRequest{Seq: after + 1, NextFor: filter})
	return err == nil && sm != nil && sm.Seq <= stop, err
}

// readHeartbeat is the idle heartbeat Read asks its ordered consumer for.
// Two missed heartbeats make the client replace the server's consumer:
// that is how a read recovers when its pull reached no consumer (on a
// cluster, a consumer just created may live on another server that the
// client's server does not know yet: "no responders") or the consumer was
// lost with its server. With the client's default (5 s) that took 10 s,
// the rebuild's whole idle timeout (projections.DefaultIdleTimeout), and
// `replay verify` on a cluster gave up (TestEraseOnACluster, 2 runs in
// 55 under load); at 1 s it takes about 2 s. A reader that waits at the log's end
// receives one small status message a second.
const readHeartbeat = time.Second

// jsCursor is JetStreamLog's Cursor.
type jsCursor struct {
	stream  string
	part    string // the log's partition token (JetStreamLog.part)
	rd      *orderedRead
	stop    uint64
	written bool // every sequence up to stop was assigned: none left pending means none left
	// left asks the leader whether a message of the read is stored after
	// a sequence, up to stop.
	left   func(ctx context.Context, after uint64) (bool, error)
	unhook func() bool

	done bool // the bounded read returned its last record; only Next uses it
}

func (c *jsCursor) Next(ctx context.Context) (Record, error) {
	if c.done {
		return Record{}, ErrEndOfRead
	}
	msg, err := c.rd.next(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return Record{}, fmt.Errorf("events: read stream %s: %w (%w)", c.stream, cerr, err)
		}
		return Record{}, fmt.Errorf("events: read stream %s: %w", c.stream, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return Record{}, fmt.Errorf("events: read stream %s: message on %s without metadata: %w", c.stream, msg.Subject(), err)
	}
	r := Record{Subject: logicalIn(c.part, msg.Subject()), Seq: md.Sequence.Stream, Time: md.Timestamp, Data: msg.Data()}
	if c.stop > 0 {
		if r.Seq > c.stop {
			c.done = true
			return Record{}, ErrEndOfRead
		}
		// Messages stored later have sequences past the stop: with none
		// pending, nothing up to it is left, unless the consumer lives on
		// a replica that has not stored them all yet (the leader tells).
		c.done = r.Seq == c.stop
		if !c.done && c.written && md.NumPending == 0 {
			more, err := c.left(ctx, r.Seq)
			if err != nil {
				return Record{}, fmt.Errorf("events: read stream %s: %w", c.stream, err)
			}
			c.done = !more
		}
	}
	return r, nil
}

// Close ends the read and deletes its consumer on the server (see
// orderedRead): when it returns, the read holds nothing there.
func (c *jsCursor) Close() {
	c.unhook()
	c.rd.stop()
}

// endedCursor is a bounded read with nothing to read.
type endedCursor struct{}

func (endedCursor) Next(context.Context) (Record, error) { return Record{}, ErrEndOfRead }
func (endedCursor) Close()                               {}
