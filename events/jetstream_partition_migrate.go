package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Moving a log of one stream to K partitions (MigrateToPartitions).
const (
	// migratePartitionsKey, on the one stream while it is moved to K
	// partitions, is K.
	migratePartitionsKey = "agentmem.migrate.partitions"
	// MigrateSourceSeqHeader, on every message MigrateToPartitions copied,
	// is the message's sequence in the one stream it came from: how an
	// interrupted copy knows where to go on, and a record of provenance.
	MigrateSourceSeqHeader = "Agentmem-Migrate-Seq"
	// partitionAsidePrefix prefixes the one stream's subject filter while
	// it is moved: agentmem.partition.<stream>.> (no writer uses it, and
	// it overlaps no other migration's).
	partitionAsidePrefix = "agentmem.partition."

	StepMoveAside       MigrateStep = "move the log's subjects aside"
	StepCopyPartitions  MigrateStep = "copy into the partitions"
	StepVerifyPartition MigrateStep = "verify the partitions"
	StepDropSnapshots   MigrateStep = "purge the actor snapshots"
	StepUnmark          MigrateStep = "unmark the partitions"
)

// PartitionMigrateConfig configures MigrateToPartitions.
type PartitionMigrateConfig struct {
	// Stream is the log stream (default StreamName).
	Stream string
	// Partitions is K, at least 2.
	Partitions int
	// SnapshotBucket is the KV bucket of the actors' snapshots, purged
	// once the copy is verified: they record sequences of the one stream
	// (default <Stream>_SNAPSHOTS; a missing bucket is skipped).
	SnapshotBucket string
	// Progress, if set, is called at the start of every step (done 0) and
	// after every message copied or compared.
	Progress func(step MigrateStep, done, total uint64)
	// IdleTimeout ends the command when no message arrives for this long
	// while a stream is read (default 10s).
	IdleTimeout time.Duration
}

// PartitionMigrateReport says what MigrateToPartitions found and did.
type PartitionMigrateReport struct {
	Stream  string
	Streams []string
	// Messages is the number of messages moved; PerPartition how many
	// each partition holds.
	Messages     uint64
	PerPartition []uint64
	// Digest is "<messages>:<hex sha256>" over the one stream's messages
	// (sequence, subject, headers but the expectation ones, data), checked
	// against the partitions message by message.
	Digest string
	// AlreadyDone: the log is already in the K partitions.
	AlreadyDone bool
	// Resumed names the state an interrupted run left ("" from the start).
	Resumed string
	Steps   []MigrateStep
}

// MigrateToPartitions moves the log from its one stream to K partition
// streams (docs/PARTITIONS.md), every message kept, each in the stream of
// its aggregate's partition in the order it had. Nothing may write the log
// meanwhile (stop every node). The steps:
//
//  1. refuse a log with a removal still pending (start a node once to
//     finish it) and a server where partition streams exist already; mark
//     the stream MigratingMetadataKey (a node refuses it) and move its
//     subject filter aside (agentmem.partition.<stream>.>): the stored
//     messages keep their subjects, and mem.ev.> is free for the
//     partitions;
//  2. create the K streams with the log's configuration, marked too;
//  3. copy the messages in order, each published to its partition with
//     its headers (Nats-Msg-Id included; the expectation headers replaced)
//     and MigrateSourceSeqHeader, expecting the partition's last sequence;
//  4. read the stream and the K partitions side by side: every message
//     found in its partition, same subject, headers and data, in order,
//     and nothing else;
//  5. purge the actor snapshots (they record the old sequences), delete
//     the one stream, unmark the partitions.
//
// Sequences change: what recorded one (the projection, the removal
// ledger's spans) is of the old stream. The projection has to be made
// again (a node makes it from the log when its file is missing).
// Interrupted at any point it is run again and goes on: the copy resumes
// after the highest MigrateSourceSeqHeader stored, the comparison is
// redone in full, and the one stream is deleted only once compared.
func MigrateToPartitions(ctx context.Context, js jetstream.JetStream, cfg PartitionMigrateConfig) (PartitionMigrateReport, error) {
	if cfg.Stream == "" {
		cfg.Stream = StreamName
	}
	if cfg.SnapshotBucket == "" {
		cfg.SnapshotBucket = cfg.Stream + "_SNAPSHOTS"
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	if cfg.Partitions < 2 || cfg.Partitions > MaxLogPartitions {
		return PartitionMigrateReport{}, fmt.Errorf("%w: partitions: %d not in 2..%d", ErrInvalidConfig, cfg.Partitions, MaxLogPartitions)
	}
	m := &partMigration{js: js, cfg: cfg, k: cfg.Partitions}
	m.rep.Stream = cfg.Stream
	for i := range m.k {
		m.rep.Streams = append(m.rep.Streams, PartitionStream(cfg.Stream, i, m.k))
	}
	err := m.run(ctx)
	return m.rep, err
}

type partMigration struct {
	js  jetstream.JetStream
	cfg PartitionMigrateConfig
	k   int
	rep PartitionMigrateReport
}

func (m *partMigration) progress(step MigrateStep, done, total uint64) {
	if m.cfg.Progress != nil {
		m.cfg.Progress(step, done, total)
	}
}

func (m *partMigration) step(s MigrateStep) {
	m.rep.Steps = append(m.rep.Steps, s)
	m.progress(s, 0, 0)
}

func (m *partMigration) run(ctx context.Context) error {
	src, err := streamInfo(ctx, m.js, "migrate", m.cfg.Stream)
	if err != nil {
		return err
	}
	parts := make([]*jetstream.StreamInfo, m.k)
	present, marked := 0, 0
	for i, name := range m.rep.Streams {
		if parts[i], err = streamInfo(ctx, m.js, "migrate", name); err != nil {
			return err
		}
		if parts[i] != nil {
			present++
			if _, ok := parts[i].Config.Metadata[MigratingMetadataKey]; ok {
				marked++
			}
			if got := parts[i].Config.Metadata[PartitionsMetadataKey]; got != strconv.Itoa(m.k) {
				return fmt.Errorf("%w: stream %s records %s=%q, asked for %d partitions", ErrPartitions, name, PartitionsMetadataKey, got, m.k)
			}
		}
	}
	if src == nil {
		switch {
		case present == m.k && marked > 0:
			// Deleted once compared: only the marks are left.
			m.rep.Resumed = "the one stream deleted, the partitions still marked"
			return m.finish(ctx)
		case present == m.k:
			m.rep.AlreadyDone = true
			for _, p := range parts {
				m.rep.PerPartition = append(m.rep.PerPartition, p.State.Msgs)
				m.rep.Messages += p.State.Msgs
			}
			return nil
		}
		return fmt.Errorf("%w: %s (and not all of its %d partition streams)", ErrNoStream, m.cfg.Stream, m.k)
	}
	if want := strconv.Itoa(m.k); src.Config.Metadata[migratePartitionsKey] == "" {
		if err := CheckNotMigrating(ctx, m.js, m.cfg.Stream); err != nil {
			return err
		}
		if tmp, err := streamInfo(ctx, m.js, "migrate", m.cfg.Stream+MigrateTempSuffix); err != nil {
			return err
		} else if tmp != nil {
			return fmt.Errorf("%w: %s exists: finish `replay migrate-log` (without --partitions) first", ErrMigrating, tmp.Config.Name)
		}
		if present > 0 {
			return fmt.Errorf("%w: partition streams of %s exist beside it: delete them or finish what made them", ErrPartitions, m.cfg.Stream)
		}
		if err := m.noPendingRemoval(ctx, src); err != nil {
			return err
		}
		if src, err = m.moveAside(ctx, src); err != nil {
			return err
		}
	} else if got := src.Config.Metadata[migratePartitionsKey]; got != want {
		return fmt.Errorf("%w: %s is being moved to %s partitions, asked for %s: run it with --partitions %s", ErrMigrateState, m.cfg.Stream, got, want, got)
	} else {
		m.rep.Resumed = fmt.Sprintf("%d of %d partition streams made, holding %d messages", present, m.k, sumMsgs(parts))
	}
	for i := range parts {
		if parts[i] != nil {
			if _, ok := parts[i].Config.Metadata[MigratingMetadataKey]; !ok {
				return fmt.Errorf("%w: %s exists unmarked while %s is being moved into it", ErrMigrateState, m.rep.Streams[i], m.cfg.Stream)
			}
			continue
		}
		c := m.partitionConfig(src.Config, i)
		if _, err := m.js.CreateStream(ctx, c); err != nil {
			return fmt.Errorf("events: migrate: create %s: %w", c.Name, err)
		}
		if parts[i], err = streamInfo(ctx, m.js, "migrate", c.Name); err != nil {
			return err
		}
	}
	if err := m.copy(ctx, src, parts); err != nil {
		return err
	}
	if err := m.verify(ctx, src); err != nil {
		return err
	}
	m.step(StepDropSnapshots)
	if err := m.dropSnapshots(ctx); err != nil {
		return err
	}
	m.step(StepDeleteOld)
	if err := deleteStream(ctx, m.js, "migrate", m.cfg.Stream); err != nil {
		return err
	}
	return m.finish(ctx)
}

func sumMsgs(parts []*jetstream.StreamInfo) uint64 {
	var n uint64
	for _, p := range parts {
		if p != nil {
			n += p.State.Msgs
		}
	}
	return n
}

// noPendingRemoval refuses a log whose removal ledger lists a removal not
// completed: its spans name sequences of this stream.
func (m *partMigration) noPendingRemoval(ctx context.Context, src *jetstream.StreamInfo) error {
	lcfg := DefaultJetStreamConfig()
	lcfg.Stream = m.cfg.Stream
	l, err := OpenJetStreamLog(m.js, lcfg)
	if err != nil {
		return err
	}
	led, err := ReadLedger(ctx, l, src.State.LastSeq)
	if err != nil {
		return fmt.Errorf("events: migrate: read the removal ledger: %w", err)
	}
	if p := led.Pending(); len(p) > 0 {
		return fmt.Errorf("%w: %d removals of %s are not completed (the first: %s): start a node once to finish them, stop it, then migrate",
			ErrMigrateState, len(p), m.cfg.Stream, p[0].Id)
	}
	return nil
}

// moveAside marks the one stream and moves its subject filter off mem.ev.>.
func (m *partMigration) moveAside(ctx context.Context, src *jetstream.StreamInfo) (*jetstream.StreamInfo, error) {
	m.step(StepMoveAside)
	c := src.Config
	c.Metadata = maps.Clone(c.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	c.Metadata[MigratingMetadataKey] = PartitionStream(m.cfg.Stream, 0, m.k) + ".."
	c.Metadata[migratePartitionsKey] = strconv.Itoa(m.k)
	c.Subjects = []string{partitionAsidePrefix + m.cfg.Stream + ".>"}
	if _, err := m.js.UpdateStream(ctx, c); err != nil {
		return nil, fmt.Errorf("events: migrate: move the subjects of %s aside: %w", m.cfg.Stream, err)
	}
	return streamInfo(ctx, m.js, "migrate", m.cfg.Stream)
}

// partitionConfig is partition i's stream made from the one stream's
// configuration, marked.
func (m *partMigration) partitionConfig(src jetstream.StreamConfig, i int) jetstream.StreamConfig {
	jc := DefaultJetStreamConfig()
	jc.Stream = m.cfg.Stream
	jc.Replicas, jc.Storage, jc.DuplicateWindow = src.Replicas, src.Storage, src.Duplicates
	jc.AllowDelete = !src.DenyDelete
	jc.DenyPurge = src.DenyPurge
	c := partitionConfig(jc, i, m.k).StreamConfig()
	c.Placement, c.MaxMsgSize = src.Placement, src.MaxMsgSize
	if v, ok := src.Metadata[CompactedMetadataKey]; ok {
		c.Metadata[CompactedMetadataKey] = v
	}
	c.Metadata[MigratingMetadataKey] = m.cfg.Stream
	return c
}

// copy publishes the one stream's messages after the highest source
// sequence the partitions hold, each to its partition.
func (m *partMigration) copy(ctx context.Context, src *jetstream.StreamInfo, parts []*jetstream.StreamInfo) error {
	m.step(StepCopyPartitions)
	last := make([]uint64, m.k)
	var from uint64
	for i, p := range parts {
		last[i] = p.State.LastSeq
		if last[i] == 0 {
			continue
		}
		s, err := m.js.Stream(ctx, p.Config.Name)
		if err != nil {
			return fmt.Errorf("events: migrate: %s: %w", p.Config.Name, err)
		}
		msg, err := s.GetMsg(ctx, last[i])
		if err != nil {
			return fmt.Errorf("events: migrate: last message of %s: %w", p.Config.Name, err)
		}
		n, err := strconv.ParseUint(msg.Header.Get(MigrateSourceSeqHeader), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: message %d of %s has no %s header", ErrMigrateState, last[i], p.Config.Name, MigrateSourceSeqHeader)
		}
		from = max(from, n)
	}
	end := src.State.LastSeq
	m.progress(StepCopyPartitions, from, end)
	if from >= end || src.State.Msgs == 0 {
		return nil
	}
	// Messages past from may all be deleted: the consumer says how many
	// are left (nothing writes the stream), and the read stops at none.
	rd, err := openOrdered(ctx, m.js, m.cfg.Stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from + 1,
	}, 256, m.cfg.IdleTimeout)
	if err != nil {
		return fmt.Errorf("events: migrate: read %s from %d: %w", m.cfg.Stream, from+1, err)
	}
	defer rd.stop()
	if info := rd.cons.CachedInfo(); info != nil && info.NumPending == 0 {
		return nil
	}
	for {
		msg, seq, pending, err := m.next(ctx, rd, m.cfg.Stream)
		if err != nil {
			return err
		}
		p, err := SubjectPartition(msg.Subject(), m.k)
		if err != nil {
			return fmt.Errorf("%w: seq %d of %s: %w", ErrMigrateState, seq, m.cfg.Stream, err)
		}
		out := &nats.Msg{Subject: StoredSubject(msg.Subject(), p, m.k), Data: msg.Data(), Header: nats.Header{}}
		for k, v := range msg.Headers() {
			if !strings.HasPrefix(k, "Nats-Expected-") {
				out.Header[k] = v
			}
		}
		out.Header.Set(MigrateSourceSeqHeader, strconv.FormatUint(seq, 10))
		out.Header.Set(jetstream.ExpectedStreamHeader, m.rep.Streams[p])
		out.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(last[p], 10))
		ack, err := m.js.PublishMsg(ctx, out)
		if err != nil {
			return fmt.Errorf("events: migrate: copy seq %d of %s to %s: %w (run again to continue)", seq, m.cfg.Stream, m.rep.Streams[p], err)
		}
		if ack.Duplicate || ack.Sequence != last[p]+1 {
			return fmt.Errorf("%w: seq %d of %s landed at seq %d of %s (duplicate %v, message id %q within the duplicate window)",
				ErrMigrateMismatch, seq, m.cfg.Stream, ack.Sequence, m.rep.Streams[p], ack.Duplicate, msg.Headers().Get(jetstream.MsgIDHeader))
		}
		last[p] = ack.Sequence
		m.progress(StepCopyPartitions, seq, end)
		if seq >= end || pending == 0 {
			return nil
		}
	}
}

// next reads the next message of an ordered read, its sequence and the
// number of messages left after it.
func (m *partMigration) next(ctx context.Context, rd *orderedRead, stream string) (jetstream.Msg, uint64, uint64, error) {
	nctx, cancel := context.WithTimeout(ctx, m.cfg.IdleTimeout)
	defer cancel()
	msg, err := rd.next(nctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, 0, 0, fmt.Errorf("events: migrate: read %s: %w", stream, cerr)
		}
		return nil, 0, 0, fmt.Errorf("events: migrate: read %s (nothing for %s?): %w", stream, m.cfg.IdleTimeout, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("events: migrate: read %s: %w", stream, err)
	}
	return msg, md.Sequence.Stream, md.NumPending, nil
}

// verify reads the one stream and the K partitions side by side.
func (m *partMigration) verify(ctx context.Context, src *jetstream.StreamInfo) error {
	m.step(StepVerifyPartition)
	total := src.State.Msgs
	d := newMigrateDigest()
	counts := make([]uint64, m.k)
	m.rep.PerPartition = counts
	if total > 0 {
		rs, err := openOrdered(ctx, m.js, m.cfg.Stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, 256, m.cfg.IdleTimeout)
		if err != nil {
			return fmt.Errorf("events: migrate: read %s: %w", m.cfg.Stream, err)
		}
		defer rs.stop()
		readers := make([]*seqReader, m.k)
		defer func() {
			for _, r := range readers {
				if r != nil {
					r.close()
				}
			}
		}()
		mig := &migration{js: m.js, cfg: MigrateConfig{IdleTimeout: m.cfg.IdleTimeout}}
		for done := uint64(0); done < total; done++ {
			ms, seq, _, err := m.next(ctx, rs, m.cfg.Stream)
			if err != nil {
				return err
			}
			p, err := SubjectPartition(ms.Subject(), m.k)
			if err != nil {
				return fmt.Errorf("%w: seq %d of %s: %w", ErrMigrateState, seq, m.cfg.Stream, err)
			}
			if readers[p] == nil {
				if readers[p], err = mig.open(ctx, m.rep.Streams[p], 1); err != nil {
					return err
				}
			}
			counts[p]++
			mp, err := readers[p].next(ctx, counts[p])
			if err != nil {
				return err
			}
			hdr := maps.Clone(mp.Headers())
			if hdr.Get(MigrateSourceSeqHeader) != strconv.FormatUint(seq, 10) {
				return fmt.Errorf("%w: seq %d of %s holds source seq %q where %d was expected", ErrMigrateMismatch, counts[p], m.rep.Streams[p], hdr.Get(MigrateSourceSeqHeader), seq)
			}
			hdr.Del(MigrateSourceSeqHeader)
			da := d.add(seq, ms.Subject(), ms.Headers(), ms.Data())
			if db := messageSum(seq, ms.Subject(), hdr, mp.Data()); mp.Subject() != StoredSubject(ms.Subject(), p, m.k) || da != db {
				return fmt.Errorf("%w: seq %d of %s (%s) differs from seq %d of %s (%s)", ErrMigrateMismatch, seq, m.cfg.Stream, ms.Subject(), counts[p], m.rep.Streams[p], mp.Subject())
			}
			m.progress(StepVerifyPartition, done+1, total)
		}
	}
	for i, name := range m.rep.Streams {
		info, err := streamInfo(ctx, m.js, "migrate", name)
		if err != nil {
			return err
		}
		if info == nil || info.State.Msgs != counts[i] {
			return fmt.Errorf("%w: %s holds %v messages, the copy of %s %d", ErrMigrateMismatch, name, msgsOf(info), m.cfg.Stream, counts[i])
		}
		m.rep.Messages += counts[i]
	}
	m.rep.Digest = d.sum()
	return nil
}

func msgsOf(info *jetstream.StreamInfo) any {
	if info == nil {
		return "no"
	}
	return info.State.Msgs
}

// dropSnapshots purges the actor snapshots' bucket (its stream KV_<bucket>).
func (m *partMigration) dropSnapshots(ctx context.Context) error {
	s, err := m.js.Stream(ctx, "KV_"+m.cfg.SnapshotBucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("events: migrate: snapshots %s: %w", m.cfg.SnapshotBucket, err)
	}
	if err := s.Purge(ctx); err != nil {
		return fmt.Errorf("events: migrate: purge the snapshots %s: %w", m.cfg.SnapshotBucket, err)
	}
	return nil
}

// finish drops the marks of the partitions.
func (m *partMigration) finish(ctx context.Context) error {
	m.step(StepUnmark)
	m.rep.PerPartition = make([]uint64, m.k)
	m.rep.Messages = 0
	for i, name := range m.rep.Streams {
		p, err := streamInfo(ctx, m.js, "migrate", name)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("%w: %s is gone", ErrMigrateState, name)
		}
		c := p.Config
		if _, ok := c.Metadata[MigratingMetadataKey]; ok {
			c.Metadata = maps.Clone(c.Metadata)
			delete(c.Metadata, MigratingMetadataKey)
			if _, err := m.js.UpdateStream(ctx, c); err != nil {
				return fmt.Errorf("events: migrate: unmark %s: %w", c.Name, err)
			}
		}
		m.rep.PerPartition[i] = p.State.Msgs
		m.rep.Messages += p.State.Msgs
	}
	return nil
}
