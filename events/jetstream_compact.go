package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Keys of the stream metadata CompactStream writes.
const (
	// CompactingMetadataKey marks a stream while CompactStream fills it
	// again from its copy; its value is the copy's name. A node refuses such
	// a stream (CheckNotMigrating, ErrCompacting): it is not whole.
	CompactingMetadataKey = "agentmem.compacting"
	// CompactedMetadataKey records the stream's state right after its last
	// compaction: "<first> <last> <msgs> <digest>". A stream whose state is
	// still that has removed nothing since, and is skipped.
	CompactedMetadataKey = "agentmem.compacted"

	// compactSourceKey (on the copy) is the JSON of the stream's
	// configuration, to recreate it after it was deleted.
	compactSourceKey = "agentmem.compact.source"
	// compactStateKey (on the copy) is "copying" until the copy was compared
	// with the stream message by message, then "verified".
	compactStateKey = "agentmem.compact.state"
	// compactDigestKey (on the copy, once verified) is "<msgs>:<hex sha256>"
	// of the held messages (seq, subject, headers, data), in order.
	compactDigestKey = "agentmem.compact.digest"
	// compactLastKey (on the copy) is the stream's last sequence when the
	// copy was made; the refilled stream gets it back even when its last
	// messages are gone.
	compactLastKey = "agentmem.compact.last"

	// CompactTempPrefix names the copy: COMPACT_<stream>. (A prefix, not a
	// suffix: KV_ and OBJ_ streams' copies must not look like buckets.)
	CompactTempPrefix = "COMPACT_"
	// compactFillerToken is the last token of the subject of the
	// content-free messages that give the refilled stream its last sequence
	// back; they are purged before the stream is unmarked.
	compactFillerToken = "_agentmem_compact_filler"
)

// CompactStep names a step of CompactStream in its progress reports.
type CompactStep string

// The steps, in order.
const (
	StepCompactCopy       CompactStep = "copy held messages"
	StepCompactVerify     CompactStep = "verify copy"
	StepCompactDelete     CompactStep = "delete stream"
	StepCompactCopyBack   CompactStep = "copy back"
	StepCompactVerifyBack CompactStep = "verify stream"
	StepCompactRestore    CompactStep = "restore last sequence"
	StepCompactDeleteCopy CompactStep = "delete copy"
)

// CompactConfig configures CompactStream.
type CompactConfig struct {
	// Progress, if set, is called at the start of every step (done 0) and
	// as messages are copied or compared, from the calling goroutine.
	Progress func(step CompactStep, done, total uint64)
	// IdleTimeout ends the command when a copy makes no progress, or no
	// message arrives while a stream is read, for this long (default 10s).
	IdleTimeout time.Duration
	// Force compacts a stream that holds every sequence from 1 or is
	// unchanged since its last compaction (skipped otherwise).
	Force bool
}

// CompactReport says what CompactStream found and did.
type CompactReport struct {
	Stream, Temp string
	// First, Last and Messages are the stream's bounds and message count,
	// equal before and after.
	First, Last, Messages uint64
	// Digest is "<messages>:<hex sha256>" over the held messages, equal
	// before and after.
	Digest string
	// Skipped says why nothing was done ("" when compacted).
	Skipped string
	// Resumed names the state an earlier, interrupted run left.
	Resumed string
	// Steps are the steps this run performed, in order.
	Steps []CompactStep
}

// CompactStream rewrites a stream so that its files hold only the messages
// it still holds, every one at its sequence and with its time, headers and
// data. JetStream's file store marks deleted and purged messages (and a
// key-value bucket's replaced revisions, an object store's deleted chunks)
// but leaves their bytes in its block files until a block happens to be
// compacted; only a secure delete overwrites them at once. A stream
// written anew from the held messages has none of those bytes, and
// deleting the old one removes its files.
//
// Nothing may write the stream meanwhile (stop every node). The steps:
//
//  1. create COMPACT_<stream> as a JetStream mirror of the stream: the
//     server copies the held messages, keeping sequences (the gaps are
//     skipped, not filled) and times; its metadata keeps the stream's
//     configuration and last sequence;
//  2. compare the two message by message (sequence, subject, headers,
//     data); promote the copy (no longer a mirror) and mark it verified with
//     the digest;
//  3. delete the stream;
//  4. create it again as a mirror of the copy, marked
//     CompactingMetadataKey (a node refuses it); a copy without messages
//     gives a plain stream whose first sequence is the old last + 1;
//  5. compare again and check the digest; promote it with its own
//     configuration; if its last messages were gone, publish content-free
//     filler messages up to the old last sequence and purge them (the last
//     sequence never moves back); drop the mark and record the compaction
//     (CompactedMetadataKey);
//  6. delete the copy.
//
// It is safe to interrupt at any point and run again: the state is read
// from the two streams (present, marks, the copy's state), a mirror goes
// on from where it was, every comparison is redone in full, and the only
// copy is never deleted (the stream only once the copy is verified, the
// copy only once the stream is verified again). A verified copy beside an
// unmarked stream that differs from it (the stream was written after an
// interrupted run) is stale: it is dropped and the compaction starts over.
func CompactStream(ctx context.Context, js jetstream.JetStream, stream string, cfg CompactConfig) (CompactReport, error) {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	c := &compaction{js: js, cfg: cfg, stream: stream, temp: CompactTempPrefix + stream}
	c.rep = CompactReport{Stream: stream, Temp: c.temp}
	err := c.run(ctx, true)
	return c.rep, err
}

// CompactCandidates lists the streams CompactStream applies to: every
// stream of the account but the copies of interrupted compactions and
// migrations (they are resumed with their stream) and streams with
// per-message TTLs (the placement leases: their messages expire by
// themselves and hold no content).
func CompactCandidates(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	var out []string
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		n := info.Config.Name
		switch {
		case strings.HasPrefix(n, CompactTempPrefix), strings.HasSuffix(n, MigrateTempSuffix), info.Config.AllowMsgTTL:
			continue
		}
		out = append(out, n)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("events: compact: list streams: %w", err)
	}
	for info := range js.ListStreams(ctx).Info() { // copies whose stream is gone
		if n, ok := strings.CutPrefix(info.Config.Name, CompactTempPrefix); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

type compaction struct {
	js           jetstream.JetStream
	cfg          CompactConfig
	stream, temp string
	rep          CompactReport
}

func (c *compaction) progress(step CompactStep, done, total uint64) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(step, done, total)
	}
}

func (c *compaction) step(s CompactStep) { c.rep.Steps = append(c.rep.Steps, s) }

// info returns the stream's info, nil if it does not exist.
func (c *compaction) info(ctx context.Context, name string) (*jetstream.StreamInfo, error) {
	return streamInfo(ctx, c.js, "compact", name)
}

func (c *compaction) delete(ctx context.Context, name string) error {
	return deleteStream(ctx, c.js, "compact", name)
}

// upToDate says why a stream needs no compaction ("" if it does).
func upToDate(info *jetstream.StreamInfo) string {
	st := info.State
	switch {
	case st.LastSeq == 0:
		return "never written"
	case st.FirstSeq == 1 && st.Msgs == st.LastSeq:
		return fmt.Sprintf("holds every sequence 1..%d: nothing was removed", st.LastSeq)
	case info.Config.Metadata[CompactedMetadataKey] != "" &&
		strings.HasPrefix(info.Config.Metadata[CompactedMetadataKey], stateKey(st)+" "):
		return "unchanged since its last compaction"
	}
	return ""
}

func stateKey(st jetstream.StreamState) string {
	return fmt.Sprintf("%d %d %d", st.FirstSeq, st.LastSeq, st.Msgs)
}

func (c *compaction) run(ctx context.Context, mayRestart bool) error {
	src, err := c.info(ctx, c.stream)
	if err != nil {
		return err
	}
	tmp, err := c.info(ctx, c.temp)
	if err != nil {
		return err
	}
	if src != nil {
		c.rep.First, c.rep.Last, c.rep.Messages = src.State.FirstSeq, src.State.LastSeq, src.State.Msgs
	}
	switch {
	case src == nil && tmp == nil:
		return fmt.Errorf("%w: %s", ErrNoStream, c.stream)
	case tmp == nil:
		if _, marked := src.Config.Metadata[CompactingMetadataKey]; marked {
			return fmt.Errorf("%w: %s is marked %s but its copy %s is gone: restore it from a backup or export", ErrCompactState, c.stream, CompactingMetadataKey, c.temp)
		}
		if why := upToDate(src); why != "" && !c.cfg.Force {
			c.rep.Skipped = why
			return nil
		}
		if err := c.checkNoDurables(ctx); err != nil {
			return err
		}
		if tmp, err = c.createCopy(ctx, src); err != nil {
			return err
		}
	default:
		if c.rep.Resumed == "" {
			c.rep.Resumed = describeCompactState(src, tmp)
		}
	}
	if tmp.Config.Metadata[compactStateKey] != migrateStateVerified {
		if src == nil {
			return fmt.Errorf("%w: %s is gone and %s is not marked verified: it is the only copy, kept; restore from it by hand or from a backup", ErrCompactState, c.stream, c.temp)
		}
		if tmp, err = c.verifyCopy(ctx, src, tmp); err != nil {
			return err
		}
	}
	orig, last, digest, err := copyRecord(tmp)
	if err != nil {
		return err
	}
	c.rep.Digest = digest
	if src != nil {
		if _, marked := src.Config.Metadata[CompactingMetadataKey]; !marked {
			if rec := src.Config.Metadata[CompactedMetadataKey]; rec != "" && strings.HasSuffix(rec, " "+digest) {
				// The stream was refilled and unmarked: only the copy is left.
				c.step(StepCompactDeleteCopy)
				return c.delete(ctx, c.temp)
			}
			// The copy was verified but the stream not deleted yet: it must
			// still be what the copy holds.
			c.step(StepCompactVerify)
			got, err := c.compare(ctx, StepCompactVerify, c.stream, c.temp, src.State.Msgs, tmp.State.Msgs)
			if err != nil || got != digest {
				if !mayRestart {
					return fmt.Errorf("%w: %s changed since its copy %s was verified: %v", ErrCompactState, c.stream, c.temp, err)
				}
				// Written after an interrupted run: the copy is stale.
				if err := c.delete(ctx, c.temp); err != nil {
					return err
				}
				c.rep.Resumed += "; its copy was stale (the stream changed since): started over"
				return c.run(ctx, false)
			}
			c.step(StepCompactDelete)
			c.progress(StepCompactDelete, 0, 1)
			if err := c.delete(ctx, c.stream); err != nil {
				return err
			}
			src = nil
		}
	}
	if src == nil {
		if src, err = c.createBack(ctx, orig, last, tmp); err != nil {
			return err
		}
	}
	if err := c.fillBack(ctx, src, tmp, orig, last, digest); err != nil {
		return err
	}
	c.step(StepCompactDeleteCopy)
	c.progress(StepCompactDeleteCopy, 0, 1)
	return c.delete(ctx, c.temp)
}

func describeCompactState(src, tmp *jetstream.StreamInfo) string {
	st := tmp.Config.Metadata[compactStateKey]
	switch {
	case src == nil:
		return fmt.Sprintf("stream deleted, copy %s %s (%d messages)", tmp.Config.Name, st, tmp.State.Msgs)
	case src.Config.Metadata[CompactingMetadataKey] != "":
		return fmt.Sprintf("stream %s being refilled: %d of %d messages", src.Config.Name, src.State.Msgs, tmp.State.Msgs)
	default:
		return fmt.Sprintf("copy %s %s (%d of %d messages)", tmp.Config.Name, st, tmp.State.Msgs, src.State.Msgs)
	}
}

// copyRecord reads what the verified copy recorded of the stream.
func copyRecord(tmp *jetstream.StreamInfo) (orig jetstream.StreamConfig, last uint64, digest string, err error) {
	md := tmp.Config.Metadata
	if err = json.Unmarshal([]byte(md[compactSourceKey]), &orig); err != nil {
		return orig, 0, "", fmt.Errorf("%w: %s metadata %s: %v", ErrCompactState, tmp.Config.Name, compactSourceKey, err)
	}
	if last, err = strconv.ParseUint(md[compactLastKey], 10, 64); err != nil {
		return orig, 0, "", fmt.Errorf("%w: %s metadata %s: %v", ErrCompactState, tmp.Config.Name, compactLastKey, err)
	}
	digest = md[compactDigestKey]
	if want := strconv.FormatUint(tmp.State.Msgs, 10) + ":"; !strings.HasPrefix(digest, want) {
		return orig, 0, "", fmt.Errorf("%w: %s holds %d messages, its verified digest says %q", ErrCompactState, tmp.Config.Name, tmp.State.Msgs, digest)
	}
	return orig, last, digest, nil
}

// checkNoDurables refuses a stream with durable consumers: deleting the
// stream would delete them and their positions (agentmem itself uses only
// ephemeral ones).
func (c *compaction) checkNoDurables(ctx context.Context) error {
	s, err := c.js.Stream(ctx, c.stream)
	if err != nil {
		return fmt.Errorf("events: compact: stream %s: %w", c.stream, err)
	}
	var durables []string
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Config.Durable != "" {
			durables = append(durables, ci.Config.Durable)
		}
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("events: compact: list consumers of %s: %w", c.stream, err)
	}
	if len(durables) > 0 {
		return fmt.Errorf("%w: stream %s has durable consumers %v: compacting it would delete them; delete them first (and recreate them after)", ErrCompactState, c.stream, durables)
	}
	return nil
}

// createCopy runs step 1: the copy as a mirror of src.
func (c *compaction) createCopy(ctx context.Context, src *jetstream.StreamInfo) (*jetstream.StreamInfo, error) {
	source, err := json.Marshal(src.Config)
	if err != nil {
		return nil, fmt.Errorf("events: compact: %w", err)
	}
	c.step(StepCompactCopy)
	tc := jetstream.StreamConfig{
		Name:        c.temp,
		Description: "agentmem: copy of " + c.stream + " while it is compacted (replay compact); do not delete",
		Retention:   jetstream.LimitsPolicy,
		Storage:     src.Config.Storage,
		Replicas:    src.Config.Replicas,
		Placement:   src.Config.Placement,
		Mirror:      &jetstream.StreamSource{Name: c.stream},
		Metadata: map[string]string{
			compactSourceKey: string(source),
			compactStateKey:  migrateStateCopying,
			compactLastKey:   strconv.FormatUint(src.State.LastSeq, 10),
		},
	}
	if _, err := c.js.CreateStream(ctx, tc); err != nil {
		return nil, fmt.Errorf("events: compact: create %s: %w", c.temp, err)
	}
	return c.info(ctx, c.temp)
}

// verifyCopy runs step 2: wait for the mirror, compare, promote and mark
// the copy verified.
func (c *compaction) verifyCopy(ctx context.Context, src, tmp *jetstream.StreamInfo) (*jetstream.StreamInfo, error) {
	var orig jetstream.StreamConfig
	if err := json.Unmarshal([]byte(tmp.Config.Metadata[compactSourceKey]), &orig); err != nil || orig.Name != c.stream {
		return nil, fmt.Errorf("%w: %s exists but is not a compaction copy of %s (metadata %s): delete it", ErrCompactState, c.temp, c.stream, compactSourceKey)
	}
	if tmp.Config.Mirror != nil {
		if err := c.waitMirror(ctx, StepCompactCopy, c.temp, src.State.Msgs); err != nil {
			return nil, err
		}
	}
	c.step(StepCompactVerify)
	digest, err := c.compare(ctx, StepCompactVerify, c.stream, c.temp, src.State.Msgs, src.State.Msgs)
	if err != nil {
		return nil, err
	}
	tmp, err = c.info(ctx, c.temp)
	if err != nil {
		return nil, err
	}
	tc := tmp.Config
	tc.Mirror = nil
	tc.Subjects = []string{"agentmem.compact." + c.stream}
	tc.Metadata = maps.Clone(tc.Metadata)
	tc.Metadata[compactStateKey] = migrateStateVerified
	tc.Metadata[compactDigestKey] = digest
	if _, err := c.js.UpdateStream(ctx, tc); err != nil {
		return nil, fmt.Errorf("events: compact: mark %s verified: %w", c.temp, err)
	}
	return c.info(ctx, c.temp)
}

// userMetadata is md without the server's own keys (_nats.*) and the
// compaction's marks.
func userMetadata(md map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		if !strings.HasPrefix(k, "_nats.") && k != CompactingMetadataKey && k != CompactedMetadataKey {
			out[k] = v
		}
	}
	return out
}

// createBack runs step 4: the stream again, marked, as a mirror of the
// copy (or, with nothing to copy, a plain stream starting after last).
func (c *compaction) createBack(ctx context.Context, orig jetstream.StreamConfig, last uint64, tmp *jetstream.StreamInfo) (*jetstream.StreamInfo, error) {
	c.step(StepCompactCopyBack)
	mark := userMetadata(orig.Metadata)
	mark[CompactingMetadataKey] = c.temp
	var sc jetstream.StreamConfig
	if tmp.State.Msgs == 0 {
		sc = orig
		sc.DenyDelete, sc.DenyPurge = false, false
		sc.FirstSeq = last + 1
		sc.Metadata = mark
	} else {
		sc = jetstream.StreamConfig{
			Name:         orig.Name,
			Description:  orig.Description,
			Retention:    orig.Retention,
			Storage:      orig.Storage,
			Replicas:     orig.Replicas,
			Placement:    orig.Placement,
			MaxConsumers: orig.MaxConsumers,
			Compression:  orig.Compression,
			Mirror:       &jetstream.StreamSource{Name: c.temp},
			Metadata:     mark,
		}
	}
	if _, err := c.js.CreateStream(ctx, sc); err != nil {
		return nil, fmt.Errorf("events: compact: create %s: %w", c.stream, err)
	}
	return c.info(ctx, c.stream)
}

// fillBack runs step 5 on the marked stream src.
func (c *compaction) fillBack(ctx context.Context, src, tmp *jetstream.StreamInfo, orig jetstream.StreamConfig, last uint64, digest string) error {
	n := tmp.State.Msgs
	filler := fillerSubject(orig)
	if src.Config.Mirror != nil {
		if err := c.waitMirror(ctx, StepCompactCopyBack, c.stream, n); err != nil {
			return err
		}
	} else if err := c.purgeFillers(ctx, filler); err != nil { // an interrupted restore
		return err
	}
	c.step(StepCompactVerifyBack)
	src, err := c.info(ctx, c.stream)
	if err != nil {
		return err
	}
	got, err := c.compare(ctx, StepCompactVerifyBack, c.stream, c.temp, src.State.Msgs, n)
	if err != nil {
		return err
	}
	if got != digest {
		return fmt.Errorf("%w: digest of %s is %s, the verified copy's %s", ErrCompactMismatch, c.stream, got, digest)
	}
	// Its own configuration, deletes allowed until the fillers are purged,
	// still marked.
	work := orig
	work.DenyDelete, work.DenyPurge = false, false
	work.FirstSeq = src.Config.FirstSeq
	work.Metadata = userMetadata(orig.Metadata)
	work.Metadata[CompactingMetadataKey] = c.temp
	if src.Config.Mirror != nil {
		if _, err := c.js.UpdateStream(ctx, work); err != nil {
			return fmt.Errorf("events: compact: promote %s: %w", c.stream, err)
		}
	}
	if src.State.LastSeq < last {
		c.step(StepCompactRestore)
		if err := c.restoreLast(ctx, filler, src.State.LastSeq, last); err != nil {
			return err
		}
	}
	if src, err = c.info(ctx, c.stream); err != nil {
		return err
	}
	final := work
	final.DenyDelete, final.DenyPurge = orig.DenyDelete, orig.DenyPurge
	final.Metadata = userMetadata(orig.Metadata)
	final.Metadata[CompactedMetadataKey] = stateKey(src.State) + " " + digest
	if _, err := c.js.UpdateStream(ctx, final); err != nil {
		return fmt.Errorf("events: compact: unmark %s: %w", c.stream, err)
	}
	c.rep.First, c.rep.Last, c.rep.Messages = src.State.FirstSeq, src.State.LastSeq, src.State.Msgs
	return nil
}

// fillerSubject is a subject of the stream no writer uses: its first
// subject with the wildcards replaced (its name when it has none).
func fillerSubject(cfg jetstream.StreamConfig) string {
	if len(cfg.Subjects) == 0 {
		return cfg.Name
	}
	toks := strings.Split(cfg.Subjects[0], ".")
	for i, t := range toks {
		if t == "*" || t == ">" {
			toks[i] = compactFillerToken
		}
	}
	if toks[len(toks)-1] != compactFillerToken {
		toks = append(toks, compactFillerToken)
	}
	return strings.Join(toks, ".")
}

// restoreLast publishes content-free fillers from have+1 to last and purges
// them: the stream's last sequence is last again.
func (c *compaction) restoreLast(ctx context.Context, filler string, have, last uint64) error {
	c.progress(StepCompactRestore, 0, last-have)
	for seq := have + 1; seq <= last; seq++ {
		msg := &nats.Msg{Subject: filler, Header: nats.Header{}}
		msg.Header.Set(jetstream.ExpectedStreamHeader, c.stream)
		msg.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(seq-1, 10))
		ack, err := c.js.PublishMsg(ctx, msg)
		if err != nil {
			return fmt.Errorf("events: compact: restore sequence %d of %s: %w (run again to continue)", seq, c.stream, err)
		}
		if ack.Sequence != seq {
			return fmt.Errorf("%w: filler for sequence %d of %s landed at %d", ErrCompactMismatch, seq, c.stream, ack.Sequence)
		}
		c.progress(StepCompactRestore, seq-have, last-have)
	}
	return c.purgeFillers(ctx, filler)
}

func (c *compaction) purgeFillers(ctx context.Context, filler string) error {
	s, err := c.js.Stream(ctx, c.stream)
	if err != nil {
		return fmt.Errorf("events: compact: %s: %w", c.stream, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(filler)); err != nil {
		return fmt.Errorf("events: compact: purge fillers of %s: %w", c.stream, err)
	}
	return nil
}

// waitMirror waits until the mirror name holds want messages, failing when
// its count does not move for the idle timeout.
func (c *compaction) waitMirror(ctx context.Context, step CompactStep, name string, want uint64) error {
	s, err := c.js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("events: compact: %s: %w", name, err)
	}
	var have uint64
	moved := time.Now()
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return fmt.Errorf("events: compact: %s: %w", name, err)
		}
		c.progress(step, info.State.Msgs, want)
		switch {
		case info.State.Msgs == want:
			return nil
		case info.State.Msgs > want:
			return fmt.Errorf("%w: the mirror %s holds %d messages, its source %d", ErrCompactMismatch, name, info.State.Msgs, want)
		case info.State.Msgs != have:
			have, moved = info.State.Msgs, time.Now()
		case time.Since(moved) > c.cfg.IdleTimeout:
			why := ""
			if info.Mirror != nil && info.Mirror.Error != nil {
				why = ": " + info.Mirror.Error.Error()
			}
			return fmt.Errorf("events: compact: the mirror %s stalled at %d of %d messages for %s%s (run again to continue)", name, have, want, c.cfg.IdleTimeout, why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("events: compact: waiting for %s: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// compare reads the streams a (na messages) and b (nb) side by side and
// fails at the first message that differs; it returns the digest of a.
func (c *compaction) compare(ctx context.Context, step CompactStep, a, b string, na, nb uint64) (string, error) {
	if na != nb {
		return "", fmt.Errorf("%w: %s holds %d messages, %s %d", ErrCompactMismatch, a, na, b, nb)
	}
	d := newMigrateDigest()
	c.progress(step, 0, na)
	if na == 0 {
		return d.sum(), nil
	}
	ra, err := c.open(ctx, a)
	if err != nil {
		return "", err
	}
	defer ra.close()
	rb, err := c.open(ctx, b)
	if err != nil {
		return "", err
	}
	defer rb.close()
	for i := uint64(1); i <= na; i++ {
		ma, sa, err := ra.nextAny(ctx)
		if err != nil {
			return "", err
		}
		mb, sb, err := rb.nextAny(ctx)
		if err != nil {
			return "", err
		}
		da, db := d.add(sa, ma.Subject(), ma.Headers(), ma.Data()), messageSum(sb, mb.Subject(), mb.Headers(), mb.Data())
		if sa != sb || ma.Subject() != mb.Subject() || da != db {
			return "", fmt.Errorf("%w: message %d differs: seq %d on %s in %s, seq %d on %s in %s", ErrCompactMismatch, i, sa, ma.Subject(), a, sb, mb.Subject(), b)
		}
		c.progress(step, i, na)
	}
	return d.sum(), nil
}

func (c *compaction) open(ctx context.Context, stream string) (*seqReader, error) {
	rd, err := openOrdered(ctx, c.js, stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, 256, c.cfg.IdleTimeout)
	if err != nil {
		return nil, fmt.Errorf("events: compact: read %s: %w", stream, err)
	}
	return &seqReader{stream: stream, rd: rd, idle: c.cfg.IdleTimeout}, nil
}

// nextAny returns the next message and its sequence, whatever it is.
func (r *seqReader) nextAny(ctx context.Context) (jetstream.Msg, uint64, error) {
	nctx, cancel := context.WithTimeout(ctx, r.idle)
	defer cancel()
	msg, err := r.rd.next(nctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, 0, fmt.Errorf("events: compact: read %s: %w", r.stream, cerr)
		}
		return nil, 0, fmt.Errorf("events: compact: read %s (nothing for %s?): %w", r.stream, r.idle, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return nil, 0, fmt.Errorf("events: compact: read %s: %w", r.stream, err)
	}
	return msg, md.Sequence.Stream, nil
}

// checkNotCompacting is CheckNotMigrating's part for CompactStream.
func checkNotCompacting(ctx context.Context, js jetstream.JetStream, stream string, s jetstream.Stream, err error) error {
	switch {
	case err == nil:
		if tmp, ok := s.CachedInfo().Config.Metadata[CompactingMetadataKey]; ok {
			return fmt.Errorf("%w: stream %s is marked %s (its copy is in %s)", ErrCompacting, stream, CompactingMetadataKey, tmp)
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, terr := js.Stream(ctx, CompactTempPrefix+stream); terr == nil {
			return fmt.Errorf("%w: stream %s is missing and %s holds its copy", ErrCompacting, stream, CompactTempPrefix+stream)
		}
	}
	return nil
}

// CheckNoCompaction returns an error wrapping ErrCompacting when a
// CompactStream of any stream of the account (the log, the snapshot
// bucket, the object store) was interrupted where that stream is not
// whole: its copy COMPACT_<stream> exists and the stream is missing or
// marked CompactingMetadataKey. A node checks this before it creates or
// opens its buckets: creating an empty bucket over a compaction's only
// copy would lose it.
func CheckNoCompaction(ctx context.Context, js jetstream.JetStream) error {
	l := js.StreamNames(ctx)
	var copies []string
	for n := range l.Name() {
		if orig, ok := strings.CutPrefix(n, CompactTempPrefix); ok {
			copies = append(copies, orig)
		}
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("events: list streams: %w", err)
	}
	for _, orig := range copies {
		s, err := js.Stream(ctx, orig)
		if err := checkNotCompacting(ctx, js, orig, s, err); err != nil {
			return err
		}
	}
	return nil
}
