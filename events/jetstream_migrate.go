package events

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Keys of the stream metadata the migration writes (see MigrateAllowDelete).
const (
	// MigratingMetadataKey marks the log stream while MigrateAllowDelete
	// fills it again; its value is the temporary stream's name.
	// NewJetStreamLog refuses such a stream (ErrMigrating): it is not whole.
	MigratingMetadataKey = "agentmem.migrating"
	// migrateSourceKey (on the temporary stream) is the JSON of the log
	// stream's configuration, kept so the stream can be recreated after it
	// was deleted.
	migrateSourceKey = "agentmem.migrate.source"
	// migrateStateKey (on the temporary stream) is "copying" until the copy
	// was compared with the log message by message, then "verified".
	migrateStateKey = "agentmem.migrate.state"
	// migrateDigestKey (on the temporary stream, once verified) is
	// "<messages>:<hex sha256>" of the log (migrateDigest).
	migrateDigestKey = "agentmem.migrate.digest"

	migrateStateCopying  = "copying"
	migrateStateVerified = "verified"

	// MigrateTempSuffix names the temporary stream: <stream>_MIGRATE.
	MigrateTempSuffix = "_MIGRATE"
	// migrateSubjectPrefix prefixes the original subjects in the temporary
	// stream (which may not overlap the log's): agentmem.migrate.<stream>.<subject>.
	migrateSubjectPrefix = "agentmem.migrate."
)

// CheckNotMigrating returns an error wrapping ErrMigrating when a
// MigrateAllowDelete of the stream was interrupted where the log is not
// whole: the stream is marked MigratingMetadataKey (half filled again), or
// it is missing while its copy <stream>_MIGRATE exists. A node checks this
// before anything reads or creates the stream; other errors of the server
// are left to the caller's own reads (nil here).
//
// It also refuses a stream CompactStream (replay compact) left half-done
// (ErrCompacting): marked CompactingMetadataKey, or missing while its copy
// COMPACT_<stream> exists.
func CheckNotMigrating(ctx context.Context, js jetstream.JetStream, stream string) error {
	s, err := js.Stream(ctx, stream)
	if cerr := checkNotCompacting(ctx, js, stream, s, err); cerr != nil {
		return cerr
	}
	switch {
	case err == nil:
		if tmp, ok := s.CachedInfo().Config.Metadata[MigratingMetadataKey]; ok {
			return fmt.Errorf("%w: stream %s is marked %s (its copy is in %s)", ErrMigrating, stream, MigratingMetadataKey, tmp)
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// Between the two halves of a migration the log is gone and its
		// copy holds it: creating an empty log would hide it.
		if _, terr := js.Stream(ctx, stream+MigrateTempSuffix); terr == nil {
			return fmt.Errorf("%w: stream %s is missing and %s holds its copy", ErrMigrating, stream, stream+MigrateTempSuffix)
		}
	}
	return nil
}

// MigrateStep names a step of MigrateAllowDelete in its progress reports.
type MigrateStep string

// The steps, in order.
const (
	StepCopyOut    MigrateStep = "copy to temporary stream"
	StepVerifyOut  MigrateStep = "verify temporary stream"
	StepDeleteOld  MigrateStep = "delete old stream"
	StepCopyBack   MigrateStep = "copy back"
	StepVerifyBack MigrateStep = "verify new stream"
	StepDeleteTemp MigrateStep = "delete temporary stream"
)

// MigrateConfig configures MigrateAllowDelete.
type MigrateConfig struct {
	// Stream is the log stream (default StreamName).
	Stream string
	// Progress, if set, is called at the start of every step (done 0) and
	// after every message copied or compared, from the calling goroutine.
	Progress func(step MigrateStep, done, total uint64)
	// IdleTimeout ends the command when no message arrives for this long
	// while a stream is read (default 10s).
	IdleTimeout time.Duration
}

// MigrateReport says what MigrateAllowDelete found and did.
type MigrateReport struct {
	Stream, Temp string
	// Messages is the log's message count; its sequences are 1..Messages
	// before and after.
	Messages uint64
	// Digest is "<messages>:<hex sha256>" over every message (sequence,
	// subject, headers but the expectation ones, data), equal before and
	// after.
	Digest string
	// AlreadyDone: the stream already allowed deletes and no migration was
	// under way; nothing was done.
	AlreadyDone bool
	// Resumed names the state an earlier, interrupted run left (empty when
	// this run started from the beginning).
	Resumed string
	// Steps are the steps this run performed, in order.
	Steps []MigrateStep
}

// MigrateAllowDelete moves the log stream to one that allows deletes and
// purges, keeping every sequence. JetStream never turns deny_delete or
// deny_purge off on an existing stream; a stream that never allowed either
// holds exactly the sequences 1..N, so copying its messages in order into a
// fresh stream gives each the same sequence, and snapshots, projection
// checkpoints and every recorded sequence stay valid.
//
// Nothing may write the stream meanwhile (stop every node). The steps:
//
//  1. copy the log into <stream>_MIGRATE (subjects prefixed with
//     agentmem.migrate.<stream>.; its metadata keeps the log's
//     configuration), each message published with Nats-Expected-Last-Sequence
//     so sequence i lands at i;
//  2. compare the two streams message by message (sequence, subject,
//     headers, data), then mark the temporary stream verified with the digest;
//  3. delete the log stream;
//  4. create it again with the same configuration but deny_delete and
//     deny_purge off, marked MigratingMetadataKey (a node refuses it), and
//     copy the messages back in order, sequence i at i;
//  5. compare again and check the digest, then drop the mark;
//  6. delete the temporary stream.
//
// It is safe to interrupt at any point and run again: the state is read
// from the two streams (which exist, their marks, their last sequences),
// copies continue after the last sequence stored, every comparison is
// redone in full, and the only copy of the log is never deleted (the log
// only once the temporary stream is verified, the temporary stream only
// once the new log is verified). Extra headers on the copies: the
// Nats-Expected-Stream and Nats-Expected-Last-Sequence of the copy replace
// the original expectation headers; Nats-Msg-Id and any other header are
// kept. Stream timestamps are the copy's (batches carry their own command
// time).
func MigrateAllowDelete(ctx context.Context, js jetstream.JetStream, cfg MigrateConfig) (MigrateReport, error) {
	if cfg.Stream == "" {
		cfg.Stream = StreamName
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	m := &migration{js: js, cfg: cfg, stream: cfg.Stream, temp: cfg.Stream + MigrateTempSuffix}
	m.rep = MigrateReport{Stream: m.stream, Temp: m.temp}
	err := m.run(ctx)
	return m.rep, err
}

type migration struct {
	js           jetstream.JetStream
	cfg          MigrateConfig
	stream, temp string
	rep          MigrateReport
}

func (m *migration) progress(step MigrateStep, done, total uint64) {
	if m.cfg.Progress != nil {
		m.cfg.Progress(step, done, total)
	}
}

func (m *migration) step(s MigrateStep) { m.rep.Steps = append(m.rep.Steps, s) }

// info returns the stream's info, nil if it does not exist.
func (m *migration) info(ctx context.Context, name string) (*jetstream.StreamInfo, error) {
	return streamInfo(ctx, m.js, "migrate", name)
}

// streamInfo returns stream name's info, nil if it does not exist; what
// names the operation in errors (migrate, compact).
func streamInfo(ctx context.Context, js jetstream.JetStream, what, name string) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("events: %s: stream %s: %w", what, name, err)
	}
	return s.CachedInfo(), nil
}

// deleteStream deletes stream name; one already gone is not an error.
func deleteStream(ctx context.Context, js jetstream.JetStream, what, name string) error {
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("events: %s: delete %s: %w", what, name, err)
	}
	return nil
}

func allowsDelete(c jetstream.StreamConfig) bool { return !c.DenyDelete && !c.DenyPurge }

func (m *migration) run(ctx context.Context) error {
	src, err := m.info(ctx, m.stream)
	if err != nil {
		return err
	}
	tmp, err := m.info(ctx, m.temp)
	if err != nil {
		return err
	}
	switch {
	case src == nil && tmp == nil:
		return fmt.Errorf("%w: %s (and no temporary stream %s of an interrupted migration)", ErrNoStream, m.stream, m.temp)
	case src != nil && allowsDelete(src.Config) && tmp == nil:
		if _, marked := src.Config.Metadata[MigratingMetadataKey]; marked {
			return fmt.Errorf("%w: %s is marked %s but the temporary stream %s is gone: restore the log from a backup or export", ErrMigrateState, m.stream, MigratingMetadataKey, m.temp)
		}
		m.rep.AlreadyDone, m.rep.Messages = true, src.State.Msgs
		return nil
	}
	if tmp != nil {
		m.rep.Resumed = describeState(src, tmp)
	}

	if src != nil && !allowsDelete(src.Config) {
		if err := m.copyOut(ctx, src, tmp); err != nil {
			return err
		}
		src = nil
		if tmp, err = m.info(ctx, m.temp); err != nil {
			return err
		}
	}
	// From here on the temporary stream is the log's verified copy.
	if tmp.Config.Metadata[migrateStateKey] != migrateStateVerified {
		return fmt.Errorf("%w: %s is gone and %s is not marked verified: it is the only copy of the log, kept; restore from it by hand or from a backup", ErrMigrateState, m.stream, m.temp)
	}
	return m.copyBack(ctx, src, tmp)
}

func describeState(src, tmp *jetstream.StreamInfo) string {
	st := tmp.Config.Metadata[migrateStateKey]
	switch {
	case src == nil:
		return fmt.Sprintf("log deleted, temporary stream %s %s (%d messages)", tmp.Config.Name, st, tmp.State.Msgs)
	case !allowsDelete(src.Config):
		return fmt.Sprintf("temporary stream %s %s (%d of %d messages)", tmp.Config.Name, st, tmp.State.Msgs, src.State.Msgs)
	default:
		return fmt.Sprintf("new stream %s holds %d of %d messages", src.Config.Name, src.State.Msgs, tmp.State.Msgs)
	}
}

// whole refuses a stream that is not exactly the sequences 1..N.
func whole(info *jetstream.StreamInfo) error {
	st := info.State
	if st.Msgs == 0 {
		return nil
	}
	if st.FirstSeq != 1 || st.Msgs != st.LastSeq-st.FirstSeq+1 {
		return fmt.Errorf("%w: stream %s holds %d messages in seq %d..%d: not every sequence from 1, copying would renumber them",
			ErrMigrateState, info.Config.Name, st.Msgs, st.FirstSeq, st.LastSeq)
	}
	return nil
}

// copyOut runs steps 1-3: the log (src, which denies deletes) into the
// temporary stream (tmp, nil if not created yet), compared, then the log
// deleted.
func (m *migration) copyOut(ctx context.Context, src, tmp *jetstream.StreamInfo) error {
	if err := whole(src); err != nil {
		return err
	}
	n := src.State.LastSeq
	if tmp == nil {
		source, err := json.Marshal(src.Config)
		if err != nil {
			return fmt.Errorf("events: migrate: %w", err)
		}
		tc := jetstream.StreamConfig{
			Name:        m.temp,
			Description: "agentmem: copy of the log " + m.stream + " while it is migrated (replay migrate-log); do not delete",
			Subjects:    []string{migrateSubjectPrefix + m.stream + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Storage:     src.Config.Storage,
			Replicas:    src.Config.Replicas,
			Placement:   src.Config.Placement,
			Duplicates:  src.Config.Duplicates,
			MaxMsgSize:  src.Config.MaxMsgSize,
			Metadata:    map[string]string{migrateSourceKey: string(source), migrateStateKey: migrateStateCopying},
		}
		if _, err := m.js.CreateStream(ctx, tc); err != nil {
			return fmt.Errorf("events: migrate: create %s: %w", m.temp, err)
		}
		if tmp, err = m.info(ctx, m.temp); err != nil {
			return err
		}
	} else if err := m.sameSource(src, tmp); err != nil {
		return err
	}
	if err := whole(tmp); err != nil {
		return err
	}
	if tmp.State.LastSeq > n {
		return fmt.Errorf("%w: %s holds %d messages, more than %s (%d): was the log changed?", ErrMigrateState, m.temp, tmp.State.LastSeq, m.stream, n)
	}
	m.step(StepCopyOut)
	prefix := migrateSubjectPrefix + m.stream + "."
	if err := m.copy(ctx, StepCopyOut, m.stream, m.temp, tmp.State.LastSeq+1, n, func(s string) (string, error) { return prefix + s, nil }); err != nil {
		return err
	}
	m.step(StepVerifyOut)
	digest, err := m.compare(ctx, StepVerifyOut, m.stream, m.temp, n, func(s string) (string, error) { return prefix + s, nil })
	if err != nil {
		return err
	}
	m.rep.Messages, m.rep.Digest = n, digest
	if tmp, err = m.info(ctx, m.temp); err != nil {
		return err
	}
	tc := tmp.Config
	tc.Metadata = maps.Clone(tc.Metadata)
	tc.Metadata[migrateStateKey] = migrateStateVerified
	tc.Metadata[migrateDigestKey] = digest
	if _, err := m.js.UpdateStream(ctx, tc); err != nil {
		return fmt.Errorf("events: migrate: mark %s verified: %w", m.temp, err)
	}
	m.step(StepDeleteOld)
	m.progress(StepDeleteOld, 0, 1)
	return deleteStream(ctx, m.js, "migrate", m.stream)
}

// sameSource checks that the temporary stream was made from this log.
func (m *migration) sameSource(src, tmp *jetstream.StreamInfo) error {
	var c jetstream.StreamConfig
	if err := json.Unmarshal([]byte(tmp.Config.Metadata[migrateSourceKey]), &c); err != nil || c.Name != src.Config.Name {
		return fmt.Errorf("%w: %s exists but is not a migration copy of %s (metadata %s): delete it or rename the log", ErrMigrateState, m.temp, m.stream, migrateSourceKey)
	}
	return nil
}

// copyBack runs steps 4-6: the log (src: nil when deleted, else the new
// stream) is filled from the verified temporary stream, compared, unmarked,
// and the temporary stream deleted.
func (m *migration) copyBack(ctx context.Context, src, tmp *jetstream.StreamInfo) error {
	var orig jetstream.StreamConfig
	if err := json.Unmarshal([]byte(tmp.Config.Metadata[migrateSourceKey]), &orig); err != nil {
		return fmt.Errorf("%w: %s metadata %s: %v", ErrMigrateState, m.temp, migrateSourceKey, err)
	}
	digest := tmp.Config.Metadata[migrateDigestKey]
	n := tmp.State.LastSeq
	if err := whole(tmp); err != nil {
		return err
	}
	if want := strconv.FormatUint(n, 10) + ":"; !strings.HasPrefix(digest, want) {
		return fmt.Errorf("%w: %s holds %d messages, its verified digest says %q", ErrMigrateState, m.temp, n, digest)
	}
	m.rep.Messages, m.rep.Digest = n, digest

	// The new log's configuration: the old one, deletes and purges allowed.
	meta := map[string]string{}
	for k, v := range orig.Metadata {
		if !strings.HasPrefix(k, "_nats.") { // the server's own
			meta[k] = v
		}
	}
	final := orig
	final.DenyDelete, final.DenyPurge = false, false
	final.Metadata = meta
	if src == nil {
		c := final
		c.Metadata = maps.Clone(meta)
		c.Metadata[MigratingMetadataKey] = m.temp
		var err error
		if _, err = m.js.CreateStream(ctx, c); err != nil {
			return fmt.Errorf("events: migrate: create %s: %w", m.stream, err)
		}
		if src, err = m.info(ctx, m.stream); err != nil {
			return err
		}
	}
	if _, marked := src.Config.Metadata[MigratingMetadataKey]; marked {
		if err := whole(src); err != nil {
			return err
		}
		if src.State.LastSeq > n {
			return fmt.Errorf("%w: %s holds %d messages, more than %s (%d): was it written during the migration?", ErrMigrateState, m.stream, src.State.LastSeq, m.temp, n)
		}
		prefix := migrateSubjectPrefix + m.stream + "."
		unprefix := func(s string) (string, error) {
			orig, ok := strings.CutPrefix(s, prefix)
			if !ok {
				return "", fmt.Errorf("%w: subject %s of %s lacks the prefix %s", ErrMigrateState, s, m.temp, prefix)
			}
			return orig, nil
		}
		m.step(StepCopyBack)
		if err := m.copy(ctx, StepCopyBack, m.temp, m.stream, src.State.LastSeq+1, n, unprefix); err != nil {
			return err
		}
	}
	// Compared in full even when an earlier run did it: it is cheap beside
	// deleting the only other copy.
	m.step(StepVerifyBack)
	prefix := migrateSubjectPrefix + m.stream + "."
	got, err := m.compare(ctx, StepVerifyBack, m.stream, m.temp, n, func(s string) (string, error) { return prefix + s, nil })
	if err != nil {
		return err
	}
	if got != digest {
		return fmt.Errorf("%w: digest of %s is %s, the verified copy's %s", ErrMigrateMismatch, m.stream, got, digest)
	}
	if _, marked := src.Config.Metadata[MigratingMetadataKey]; marked {
		// Also sets back what CreateStream may have defaulted.
		if _, err := m.js.UpdateStream(ctx, final); err != nil {
			return fmt.Errorf("events: migrate: unmark %s: %w", m.stream, err)
		}
	}
	m.step(StepDeleteTemp)
	m.progress(StepDeleteTemp, 0, 1)
	return deleteStream(ctx, m.js, "migrate", m.temp)
}

// copy publishes the messages from..to of stream from to stream to, in
// order, subject mapped by subj, each expecting the one before it so that
// sequence i lands at i.
func (m *migration) copy(ctx context.Context, step MigrateStep, from, to string, first, last uint64, subj func(string) (string, error)) error {
	m.progress(step, first-1, last)
	if first > last {
		return nil
	}
	r, err := m.open(ctx, from, first)
	if err != nil {
		return err
	}
	defer r.close()
	for seq := first; seq <= last; seq++ {
		msg, err := r.next(ctx, seq)
		if err != nil {
			return err
		}
		s, err := subj(msg.Subject())
		if err != nil {
			return err
		}
		out := &nats.Msg{Subject: s, Data: msg.Data(), Header: nats.Header{}}
		for k, v := range msg.Headers() {
			if !strings.HasPrefix(k, "Nats-Expected-") {
				out.Header[k] = v
			}
		}
		out.Header.Set(jetstream.ExpectedStreamHeader, to)
		out.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(seq-1, 10))
		ack, err := m.js.PublishMsg(ctx, out)
		if err != nil {
			return fmt.Errorf("events: migrate: copy seq %d of %s to %s: %w (run again to continue)", seq, from, to, err)
		}
		if ack.Duplicate || ack.Sequence != seq {
			return fmt.Errorf("%w: seq %d of %s landed at seq %d of %s (duplicate %v, message id %q within the duplicate window)",
				ErrMigrateMismatch, seq, from, ack.Sequence, to, ack.Duplicate, msg.Headers().Get(jetstream.MsgIDHeader))
		}
		m.progress(step, seq, last)
	}
	return nil
}

// compare reads the streams a (original subjects) and b (subjects mapped
// by subj) side by side over 1..n and fails at the first message that
// differs; it returns the digest of a.
func (m *migration) compare(ctx context.Context, step MigrateStep, a, b string, n uint64, subj func(string) (string, error)) (string, error) {
	d := newMigrateDigest()
	m.progress(step, 0, n)
	if n == 0 {
		return d.sum(), nil
	}
	ra, err := m.open(ctx, a, 1)
	if err != nil {
		return "", err
	}
	defer ra.close()
	rb, err := m.open(ctx, b, 1)
	if err != nil {
		return "", err
	}
	defer rb.close()
	for seq := uint64(1); seq <= n; seq++ {
		ma, err := ra.next(ctx, seq)
		if err != nil {
			return "", err
		}
		mb, err := rb.next(ctx, seq)
		if err != nil {
			return "", err
		}
		want, err := subj(ma.Subject())
		if err != nil {
			return "", err
		}
		da, db := d.add(seq, ma.Subject(), ma.Headers(), ma.Data()), messageSum(seq, ma.Subject(), mb.Headers(), mb.Data())
		if mb.Subject() != want || da != db {
			return "", fmt.Errorf("%w: seq %d differs between %s (%s) and %s (%s)", ErrMigrateMismatch, seq, a, ma.Subject(), b, mb.Subject())
		}
		m.progress(step, seq, n)
	}
	return d.sum(), nil
}

// migrateDigest chains the sums of the messages in order.
type migrateDigest struct {
	h hash.Hash
	n uint64
}

func newMigrateDigest() *migrateDigest { return &migrateDigest{h: sha256.New()} }

func (d *migrateDigest) add(seq uint64, subject string, hdr nats.Header, data []byte) [32]byte {
	s := messageSum(seq, subject, hdr, data)
	d.h.Write(s[:])
	d.n++
	return s
}

func (d *migrateDigest) sum() string {
	return strconv.FormatUint(d.n, 10) + ":" + hex.EncodeToString(d.h.Sum(nil))
}

// messageSum is the sha256 of one message: sequence, subject, the headers
// (sorted, without the Nats-Expected-* ones a copy replaces) and data, each
// length-prefixed.
func messageSum(seq uint64, subject string, hdr nats.Header, data []byte) [32]byte {
	h := sha256.New()
	var b [8]byte
	field := func(p []byte) {
		binary.BigEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write(p)
	}
	binary.BigEndian.PutUint64(b[:], seq)
	h.Write(b[:])
	field([]byte(subject))
	for _, k := range slices.Sorted(maps.Keys(hdr)) {
		if strings.HasPrefix(k, "Nats-Expected-") {
			continue
		}
		for _, v := range hdr[k] {
			field([]byte(k))
			field([]byte(v))
		}
	}
	field(data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// seqReader reads a stream in order from a sequence with an ordered
// consumer, requiring every sequence; close deletes the consumer.
type seqReader struct {
	stream string
	rd     *orderedRead
	idle   time.Duration
}

func (m *migration) open(ctx context.Context, stream string, from uint64) (*seqReader, error) {
	rd, err := openOrdered(ctx, m.js, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	}, 256, m.cfg.IdleTimeout)
	if err != nil {
		return nil, fmt.Errorf("events: migrate: read %s from %d: %w", stream, from, err)
	}
	return &seqReader{stream: stream, rd: rd, idle: m.cfg.IdleTimeout}, nil
}

func (r *seqReader) close() { r.rd.stop() }

// next returns the message at seq, which must be the next one.
func (r *seqReader) next(ctx context.Context, seq uint64) (jetstream.Msg, error) {
	nctx, cancel := context.WithTimeout(ctx, r.idle)
	defer cancel()
	msg, err := r.rd.next(nctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("events: migrate: read seq %d of %s: %w", seq, r.stream, cerr)
		}
		return nil, fmt.Errorf("events: migrate: read seq %d of %s (nothing for %s?): %w", seq, r.stream, r.idle, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("events: migrate: read %s: %w", r.stream, err)
	}
	if md.Sequence.Stream != seq {
		return nil, fmt.Errorf("%w: %s: read seq %d where seq %d was expected", ErrMigrateMismatch, r.stream, md.Sequence.Stream, seq)
	}
	return msg, nil
}
