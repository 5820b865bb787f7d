package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStreamConfig configures the stream holding the log.
type JetStreamConfig struct {
	// Stream is the stream name (default StreamName).
	Stream string
	// Replicas is the stream replication factor: 1 (embedded node) or 3
	// (cluster; survives losing a machine).
	Replicas int
	// DuplicateWindow is how long Nats-Msg-Id values are remembered for
	// deduplication: retries after ErrUnknownOutcome must happen within it.
	DuplicateWindow time.Duration
	// Storage is file storage unless told otherwise.
	Storage jetstream.StorageType
	// RequestTimeout bounds each request to the server when the context has
	// no deadline (default 5s).
	RequestTimeout time.Duration
	// DenyPurge creates the stream with deny_purge (the default): nobody,
	// whatever their rights, can purge the log, whole or one subject. It
	// cannot be turned off on a stream that has it (JetStream refuses).
	// Erasure is then an offline admin path: export, filter, import into a
	// new stream (see the package doc).
	DenyPurge bool
	// AllowDelete creates a new stream without deny_delete and deny_purge
	// (DenyPurge is then ignored), as erasure needs. An existing stream
	// keeps its own: one that denies deletes is moved to one that allows
	// them only by MigrateAllowDelete (replay migrate-log), and one that
	// allows them is never made to deny them again, whatever this says.
	AllowDelete bool
	// Logger receives the warning NewJetStreamLog logs when the server
	// refuses to turn deny_delete or deny_purge on for an existing stream
	// (nil: slog.Default()).
	Logger *slog.Logger

	// partition of partitions: set by NewPartitionedLog on the config of
	// each stream of a log in more than one partition (0 of 0: the one
	// stream of today's layout).
	partition, partitions int
}

// DefaultJetStreamConfig returns stream MEM, one replica, file storage, a
// 2 minute dedupe window and deny_purge.
func DefaultJetStreamConfig() JetStreamConfig {
	return JetStreamConfig{
		Stream:          StreamName,
		Replicas:        1,
		DuplicateWindow: 2 * time.Minute,
		Storage:         jetstream.FileStorage,
		RequestTimeout:  5 * time.Second,
		DenyPurge:       true,
	}
}

// Validate reports the first problem of the configuration, wrapping ErrInvalidConfig.
func (c JetStreamConfig) Validate() error {
	switch {
	case c.Stream == "" || strings.ContainsAny(c.Stream, ".*> \t\r\n/\\"):
		return fmt.Errorf("%w: Stream: %q is not a valid stream name", ErrInvalidConfig, c.Stream)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("%w: Replicas: %d not in 1..5", ErrInvalidConfig, c.Replicas)
	case c.DuplicateWindow <= 0:
		return fmt.Errorf("%w: DuplicateWindow: must be > 0", ErrInvalidConfig)
	case c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("%w: Storage: unknown storage type %d", ErrInvalidConfig, c.Storage)
	case c.RequestTimeout < 0:
		return fmt.Errorf("%w: RequestTimeout: must be >= 0", ErrInvalidConfig)
	}
	return nil
}

// StreamConfig is the JetStream stream configuration the log creates.
func (c JetStreamConfig) StreamConfig() jetstream.StreamConfig {
	sc := jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "agentmem event log: one subject per aggregate, one EventBatch per message",
		Subjects:    []string{SubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     c.Storage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
		// Direct gets let any replica serve reads (KV-style lookups by
		// subscribers); the log itself reads through the leader.
		AllowDirect: true,
		// An aggregate with a hole cannot be replayed: never delete single
		// messages, unless told (erasure deletes with care).
		DenyDelete: !c.AllowDelete,
		// A purge removes an aggregate's history (or all of them) while its
		// snapshot and the projection still hold it: deny it unless told.
		DenyPurge: c.DenyPurge && !c.AllowDelete,
	}
	if c.partitions > 1 {
		sc.Subjects = []string{PartitionSubjects(c.partition, c.partitions)}
		sc.Metadata = map[string]string{
			PartitionsMetadataKey: strconv.Itoa(c.partitions),
			PartitionMetadataKey:  strconv.Itoa(c.partition),
		}
	}
	return sc
}

// part is the subject token of the config's partition ("" in today's
// layout).
func (c JetStreamConfig) part() string {
	if c.partitions <= 1 {
		return ""
	}
	return partitionToken(c.partition)
}

// JetStreamLog is the Log on a JetStream stream. It holds no goroutines:
// Append is a publish with expectation headers; Load a short-lived consumer
// bounded by the leader's last sequence, deleted before Load returns.
type JetStreamLog struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	stream  string
	timeout time.Duration
	// part is the subject token of this stream's partition ("p3") in a
	// log in several partitions, "" in the one stream of today's layout:
	// subjects go in with it (storedIn) and come out without (logicalIn).
	part string

	msgGetSubj string // leader-only message get ($JS.API.STREAM.MSG.GET.<stream>)
}

var _ Log = (*JetStreamLog)(nil)

// NewJetStreamLog creates the stream, or updates it to cfg, and returns the log.
// A stream that allows deletes (MigrateAllowDelete, AllowDelete) keeps
// allowing them; one a migration left half-done is refused (ErrMigrating).
// If the server refuses to turn deny_delete or deny_purge on for an existing
// stream (some JetStream versions do not allow changing them), the stream
// keeps its own value of that setting and a warning naming it is logged.
func NewJetStreamLog(ctx context.Context, js jetstream.JetStream, cfg JetStreamConfig) (*JetStreamLog, error) {
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultJetStreamConfig().RequestTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ensureStream(ctx, js, cfg); err != nil {
		return nil, err
	}
	prefix := apiPrefix(js.Options())
	return &JetStreamLog{
		js:         js,
		nc:         js.Conn(),
		stream:     cfg.Stream,
		timeout:    cfg.RequestTimeout,
		part:       cfg.part(),
		msgGetSubj: prefix + "STREAM.MSG.GET." + cfg.Stream,
	}, nil
}

// ensureStream creates the stream or updates it to cfg. An existing stream
// keeps its deny settings where cfg cannot change them: one that allows
// deletes (no deny_delete: made by MigrateAllowDelete or with AllowDelete;
// no build ever created the log without it otherwise) keeps allowing
// deletes and purges, and one that denies deletes keeps denying them when
// cfg asks for AllowDelete (JetStream never lifts a deny; a warning says to
// migrate). A stream marked MigratingMetadataKey, or a missing one whose
// migration copy exists, is refused (ErrMigrating).
// When the update is refused and the stream lacks a deny setting cfg asks
// for, the update is tried again with the stream's own value of those
// settings.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg JetStreamConfig) error {
	want := cfg.StreamConfig()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err := CheckNotMigrating(ctx, js, cfg.Stream); err != nil {
		return err
	}
	if s, err := js.Stream(ctx, cfg.Stream); err == nil {
		have := s.CachedInfo().Config
		// The record of the last physical compaction lives in the
		// stream's metadata, which an update replaces: carry it over.
		if v, ok := have.Metadata[CompactedMetadataKey]; ok {
			if want.Metadata == nil {
				want.Metadata = map[string]string{}
			}
			want.Metadata[CompactedMetadataKey] = v
		}
		switch {
		case !have.DenyDelete:
			want.DenyDelete, want.DenyPurge = false, false
		case !want.DenyDelete:
			want.DenyDelete, want.DenyPurge = true, have.DenyPurge
			logger.Warn("the log stream denies deletes and JetStream never lifts that: kept it; run `replay migrate-log` with the node stopped to move the log to a stream that allows deletes",
				"stream", cfg.Stream, "setting", "deny_delete")
		}
	}
	_, err := js.CreateOrUpdateStream(ctx, want)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("events: create or update stream %s: %w", cfg.Stream, err)
	st, ierr := js.Stream(ctx, cfg.Stream)
	if ierr != nil {
		return err
	}
	have := st.CachedInfo().Config
	keep, kept := want, []string(nil)
	if want.DenyDelete && !have.DenyDelete {
		keep.DenyDelete = false
		kept = append(kept, "deny_delete")
	}
	if want.DenyPurge && !have.DenyPurge {
		keep.DenyPurge = false
		kept = append(kept, "deny_purge")
	}
	if len(kept) == 0 {
		return err
	}
	if _, uerr := js.UpdateStream(ctx, keep); uerr != nil {
		return err
	}
	for _, name := range kept {
		logger.Warn("the server refused to turn "+name+" on for the existing log stream; kept the stream without it",
			"stream", cfg.Stream, "setting", name, "err", err)
	}
	return nil
}

func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if !strings.HasSuffix(o.APIPrefix, ".") {
			return o.APIPrefix + "."
		}
		return o.APIPrefix
	}
	return jetstream.DefaultAPIPrefix
}

// Stream is the name of the stream holding the log.
func (l *JetStreamLog) Stream() string { return l.stream }

func (l *JetStreamLog) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.timeout)
}

// Append implements Log. The message carries Nats-Expected-Stream,
// Nats-Expected-Last-Subject-Sequence (always, 0 included) and Nats-Msg-Id.
func (l *JetStreamLog) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (AppendResult, error) {
	if _, _, err := ParseSubject(subject); err != nil {
		return AppendResult{}, err
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	stored := storedIn(l.part, subject)
	m := &nats.Msg{Subject: stored, Data: data, Header: make(nats.Header, 3)}
	m.Header.Set(jetstream.ExpectedStreamHeader, l.stream)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expectedLastSeq, 10))
	if msgID != "" {
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	ack, err := l.js.PublishMsg(ctx, m)
	if err == nil {
		return AppendResult{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		// The server checks the expectation before the msgID, so a retry whose
		// first attempt was stored lands here. Only one message can follow
		// expectedLastSeq on the subject (its writer expected it): if that one
		// carries msgID, it is ours.
		if msgID != "" {
			if seq, ok, derr := l.successorHasMsgID(ctx, stored, expectedLastSeq, msgID); derr != nil {
				return AppendResult{}, fmt.Errorf("%w: conflict on %s, then checking for a duplicate: %w", ErrUnknownOutcome, subject, derr)
			} else if ok {
				return AppendResult{Seq: seq, Duplicate: true}, nil
			}
		}
		return AppendResult{}, &ConflictError{Subject: subject, Expected: expectedLastSeq}
	}
	if unknownOutcome(err) {
		if l.streamMissing(ctx, err) {
			return AppendResult{}, fmt.Errorf("%w: %w: append to %s: stream %s not found (deleted?): %w", ErrUnknownOutcome, ErrNoStream, subject, l.stream, err)
		}
		return AppendResult{}, fmt.Errorf("%w: append to %s: %w", ErrUnknownOutcome, subject, err)
	}
	return AppendResult{}, fmt.Errorf("events: append to %s: %w", subject, err)
}

// streamMissing reports whether a publish that nothing answered (err) went
// unanswered because the stream is gone: it asks the server.
func (l *JetStreamLog) streamMissing(ctx context.Context, err error) bool {
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
		return false
	}
	_, serr := l.js.Stream(ctx, l.stream)
	return errors.Is(serr, jetstream.ErrStreamNotFound)
}

// unknownOutcome reports errors after which the message may have been stored.
func unknownOutcome(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrDisconnected)
}

// LastSeq implements Log. It asks the stream leader (not a direct get, which
// any replica may answer).
func (l *JetStreamLog) LastSeq(ctx context.Context, subject string) (uint64, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	sm, err := l.leaderGet(ctx, msgGetRequest{LastFor: storedIn(l.part, subject)})
	if err != nil || sm == nil {
		return 0, err
	}
	return sm.Seq, nil
}

// successorHasMsgID: subject is the stored one.
func (l *JetStreamLog) successorHasMsgID(ctx context.Context, subject string, seq uint64, msgID string) (uint64, bool, error) {
	sm, err := l.leaderGet(ctx, msgGetRequest{Seq: seq + 1, NextFor: subject})
	if err != nil || sm == nil {
		return 0, false, err
	}
	if len(sm.Header) == 0 {
		return 0, false, nil
	}
	hdr, err := nats.DecodeHeadersMsg(sm.Header)
	if err != nil {
		return 0, false, fmt.Errorf("events: headers of %s seq %d: %w", subject, sm.Seq, err)
	}
	return sm.Seq, hdr.Get(jetstream.MsgIDHeader) == msgID, nil
}

// msgGetRequest is the JetStream message get request.
type msgGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

type storedMsg struct {
	Subject string    `json:"subject"`
	Seq     uint64    `json:"seq"`
	Header  []byte    `json:"hdrs,omitempty"`
	Data    []byte    `json:"data,omitempty"`
	Time    time.Time `json:"time"`
}

type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *storedMsg          `json:"message,omitempty"`
}

// leaderGet runs a message get on the stream leader. A missing message is
// (nil, nil).
func (l *JetStreamLog) leaderGet(ctx context.Context, req msgGetRequest) (*storedMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := l.nc.RequestWithContext(ctx, l.msgGetSubj, body)
	if err != nil {
		return nil, fmt.Errorf("events: get message from stream %s: %w", l.stream, err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("events: get message from stream %s: bad response: %w", l.stream, err)
	}
	if resp.Error != nil {
		switch resp.Error.ErrorCode {
		case jetstream.JSErrCodeMessageNotFound:
			return nil, nil
		case jetstream.JSErrCodeStreamNotFound:
			return nil, fmt.Errorf("%w: stream %s not found (deleted?): %w", ErrNoStream, l.stream, resp.Error)
		}
		return nil, fmt.Errorf("events: get message from stream %s: %w", l.stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("events: get message from stream %s: empty response", l.stream)
	}
	return resp.Message, nil
}
