package largedata

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const (
	// Kind is the aggregate kind of large data: events on mem.ev.data.<id>.
	Kind = "data"

	// refMetaKey is the object metadata key holding the DataReference
	// (deterministic protobuf, standard base64).
	refMetaKey = "agentmem-ref"

	// maxRefBytes bounds the encoded reference kept in the object's
	// metadata (content type and user metadata included).
	maxRefBytes = 64 << 10

	// appendAttempts bounds the retries of an event append whose outcome
	// is unknown (same msg id and expectation: safe to repeat).
	appendAttempts = 3

	// expireCommand is the command id of the DataExpired batch (the
	// DataStored batch's command id is the data id).
	expireCommand = "expire"
)

// Store keeps large data: durable bytes in a JetStream object store bucket,
// recent bytes in a byte-bounded LRU, and one event per stored or expired
// object in the log. It holds no goroutines of its own; Run sweeps until its
// context ends. All methods are safe for concurrent use.
type Store struct {
	cfg    Config
	obj    jetstream.ObjectStore
	up     jetstream.ObjectStore // uploads: parts not yet committed (upload.go)
	log    events.Log
	codec  *events.Codec
	now    func() time.Time
	mem    *lru
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	logger *slog.Logger
}

// New creates the bucket (or opens it if it exists) and returns the Store.
// now is the clock for leases (nil: time.Now).
func New(ctx context.Context, js jetstream.JetStream, log events.Log, cfg Config, now func() time.Time) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil || log == nil {
		return nil, fmt.Errorf("%w: nil JetStream or log", ErrInvalidConfig)
	}
	if now == nil {
		now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	obj, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      cfg.Bucket,
		Description: "agentmem large data: one object per DataReference id",
		Replicas:    cfg.Replicas,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("largedata: create or open bucket %s: %w", cfg.Bucket, err)
	}
	up, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      cfg.Bucket + uploadsSuffix,
		Description: "agentmem large data uploads: parts not yet committed, removed after the TTL",
		Replicas:    cfg.Replicas,
		Storage:     jetstream.FileStorage,
		TTL:         cfg.UploadTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("largedata: create or open bucket %s: %w", cfg.Bucket+uploadsSuffix, err)
	}
	// EncodeAll and DecodeAll are safe for concurrent use and start no
	// goroutines (no streaming reader or writer is ever attached).
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("largedata: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(cfg.MaxBytes)))
	if err != nil {
		return nil, fmt.Errorf("largedata: zstd decoder: %w", err)
	}
	return &Store{
		cfg:    cfg,
		obj:    obj,
		up:     up,
		log:    log,
		codec:  events.NewCodec(),
		now:    now,
		mem:    newLRU(cfg.MemoryBytes),
		enc:    enc,
		dec:    dec,
		logger: logger,
	}, nil
}

// MemoryBytes is the number of bytes currently held by the memory tier.
func (s *Store) MemoryBytes() int64 { return s.mem.size() }

// Put stores data under a new random id and returns its reference and the
// log sequence of its DataStored event. ttl 0 means Config.DefaultTTL.
// Put keeps no reference to data.
//
// Order: the object is written first, then the DataStored event. An error
// after the object is written (the event append failed, or its outcome is
// unknown) leaves an object that nobody was given the id of; it expires by
// its lease like any other and the sweep deletes it.
func (s *Store) Put(ctx context.Context, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error) {
	return s.PutOwned(ctx, "", data, contentType, metadata, ttl)
}

// PutOwned is Put with the reference's owner set (who may read it:
// DataReference.owner).
func (s *Store) PutOwned(ctx context.Context, owner string, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error) {
	if int64(len(data)) > s.cfg.MaxBytes {
		return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), s.cfg.MaxBytes)
	}
	if ttl < 0 {
		return nil, 0, fmt.Errorf("%w: ttl %v < 0", ErrInvalidArgument, ttl)
	}
	if ttl == 0 {
		ttl = s.cfg.DefaultTTL
	}
	id, err := newID()
	if err != nil {
		return nil, 0, err
	}
	sum := sha256.Sum256(data)
	stored, compressed := data, false
	if s.cfg.CompressThreshold >= 0 && len(data) >= s.cfg.CompressThreshold {
		if c := s.enc.EncodeAll(data, make([]byte, 0, len(data)/2)); len(c) < len(data) {
			stored, compressed = c, true
		}
	}
	now := s.now()
	ref := &memoryv1.DataReference{
		Id:              id,
		Size:            uint64(len(data)),
		Sha256:          hex.EncodeToString(sum[:]),
		Compressed:      compressed,
		StoredSize:      uint64(len(stored)),
		ContentType:     contentType,
		Owner:           owner,
		Metadata:        cloneMap(metadata),
		StoredUnixNano:  now.UnixNano(),
		ExpiresUnixNano: now.Add(ttl).UnixNano(),
	}
	encRef, err := encodeRef(ref)
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.obj.Put(ctx, jetstream.ObjectMeta{
		Name:     id,
		Metadata: map[string]string{refMetaKey: encRef},
	}, bytes.NewReader(stored)); err != nil {
		return nil, 0, fmt.Errorf("largedata: put object %s: %w", id, err)
	}
	seq, err := s.appendEvent(ctx, id, 0, 1, id, storedMsgID(id), &memoryv1.DataStored{Ref: ref})
	if err != nil {
		return nil, 0, err
	}
	s.mem.put(id, ref, bytes.Clone(data))
	return proto.Clone(ref).(*memoryv1.DataReference), seq, nil
}

// Get returns the reference and a copy of the bytes of id (the caller owns
// the slice). Bytes read from the object store are checked against the
// reference's sha256 on every read: a mismatch is ErrCorrupt and no bytes.
func (s *Store) Get(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error) {
	ref, data, err := s.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return ref, bytes.Clone(data), nil
}

// GetRange is Get of the bytes [offset, offset+length) only (length 0: to
// the end; a range past the end is cut at it). The whole object is read and
// verified, and kept in the memory tier, so reading an object range by
// range reads the object store once when the tier holds it. An offset past
// the size is ErrInvalidArgument.
func (s *Store) GetRange(ctx context.Context, id string, offset, length uint64) (*memoryv1.DataReference, []byte, error) {
	ref, data, err := s.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	size := uint64(len(data))
	if offset > size {
		return nil, nil, fmt.Errorf("%w: offset %d is past the %d bytes of %s", ErrInvalidArgument, offset, size, id)
	}
	end := size
	if length != 0 && length < size-offset {
		end = offset + length
	}
	return ref, bytes.Clone(data[offset:end]), nil
}

// get returns the reference (a copy) and the verified bytes of id, which
// may be shared with the memory tier: callers copy what they return.
func (s *Store) get(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error) {
	if err := checkID(id); err != nil {
		return nil, nil, err
	}
	if ref, data, ok := s.mem.get(id); ok {
		if err := s.checkLease(ctx, ref); err != nil {
			return nil, nil, err
		}
		return proto.Clone(ref).(*memoryv1.DataReference), data, nil
	}
	res, err := s.obj.Get(ctx, id)
	if err != nil {
		return nil, nil, s.objectErr(ctx, id, err)
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return nil, nil, s.objectErr(ctx, id, err)
	}
	ref, err := refOf(info)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkLease(ctx, ref); err != nil {
		return nil, nil, err
	}
	// MinRead of headroom: ReadFrom needs it to see EOF without regrowing.
	buf := bytes.NewBuffer(make([]byte, 0, info.Size+bytes.MinRead))
	if _, err := buf.ReadFrom(res); err != nil {
		// The object store checks its own digest at the end of the read.
		if errors.Is(err, jetstream.ErrDigestMismatch) {
			return nil, nil, fmt.Errorf("%w: %s: object store digest mismatch: %v", ErrCorrupt, id, err)
		}
		return nil, nil, fmt.Errorf("largedata: read object %s: %w", id, err)
	}
	data, err := s.decode(ref, buf.Bytes())
	if err != nil {
		return nil, nil, err
	}
	s.mem.put(id, ref, data)
	return proto.Clone(ref).(*memoryv1.DataReference), data, nil
}

// Ref returns the reference of id without reading its bytes (from the memory
// tier, else the object's metadata). An expired reference is ErrExpired.
func (s *Store) Ref(ctx context.Context, id string) (*memoryv1.DataReference, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	ref, _, ok := s.mem.get(id)
	if !ok {
		info, err := s.obj.GetInfo(ctx, id)
		if err != nil {
			return nil, s.objectErr(ctx, id, err)
		}
		if ref, err = refOf(info); err != nil {
			return nil, err
		}
	}
	if err := s.checkLease(ctx, ref); err != nil {
		return nil, err
	}
	return proto.Clone(ref).(*memoryv1.DataReference), nil
}

// decode turns stored bytes back into the original ones and verifies them
// against ref (size and sha256). The returned slice is new.
func (s *Store) decode(ref *memoryv1.DataReference, stored []byte) ([]byte, error) {
	if uint64(len(stored)) != ref.GetStoredSize() {
		return nil, fmt.Errorf("%w: %s: stored size %d, reference says %d", ErrCorrupt, ref.GetId(), len(stored), ref.GetStoredSize())
	}
	data := stored
	if ref.GetCompressed() {
		if ref.GetSize() > uint64(s.cfg.MaxBytes) {
			return nil, fmt.Errorf("%w: %s: size %d above the limit %d", ErrCorrupt, ref.GetId(), ref.GetSize(), s.cfg.MaxBytes)
		}
		var err error
		data, err = s.dec.DecodeAll(stored, make([]byte, 0, ref.GetSize()))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: decompress: %v", ErrCorrupt, ref.GetId(), err)
		}
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != ref.GetSha256() || uint64(len(data)) != ref.GetSize() {
		return nil, fmt.Errorf("%w: %s: sha256 %s (%d bytes), reference says %s (%d bytes)",
			ErrCorrupt, ref.GetId(), got, len(data), ref.GetSha256(), ref.GetSize())
	}
	return data, nil
}

// checkLease refuses (ErrExpired) a reference whose lease has ended, unless
// the Holder still holds it.
func (s *Store) checkLease(ctx context.Context, ref *memoryv1.DataReference) error {
	if !s.leaseEnded(ref, s.now().UnixNano()) || s.held(ctx, ref) {
		return nil
	}
	return fmt.Errorf("%w: %s: its lease ended at %s", ErrExpired, ref.GetId(), time.Unix(0, ref.GetExpiresUnixNano()).UTC().Format(time.RFC3339))
}

func (s *Store) leaseEnded(ref *memoryv1.DataReference, now int64) bool {
	exp := ref.GetExpiresUnixNano()
	return exp != 0 && exp <= now
}

// held asks the Holder about a reference whose lease has ended; an error
// counts as held (the sweep asks again, and a read is not refused because
// the referrer could not answer).
func (s *Store) held(ctx context.Context, ref *memoryv1.DataReference) bool {
	if s.cfg.Holder == nil {
		return false
	}
	ok, err := s.cfg.Holder.Held(ctx, ref)
	if err != nil {
		s.logger.Warn("largedata: cannot tell whether data is still referred to; kept", "id", ref.GetId(), "err", err)
		return true
	}
	return ok
}

// objectErr maps an object store error on id. An object that is gone is
// ErrExpired when the log records its DataExpired (the sweep removed it),
// else ErrNotFound.
func (s *Store) objectErr(ctx context.Context, id string, err error) error {
	if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("largedata: object %s: %w", id, err)
	}
	if ref, expired, lerr := s.history(ctx, id); lerr == nil && expired {
		at := ""
		if exp := ref.GetExpiresUnixNano(); exp != 0 {
			at = " at " + time.Unix(0, exp).UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%w: %s: its lease ended%s and it was removed", ErrExpired, id, at)
	}
	return fmt.Errorf("%w: %s", ErrNotFound, id)
}

// history reads the events of id: the stored reference (nil if none) and
// whether a DataExpired follows it.
func (s *Store) history(ctx context.Context, id string) (*memoryv1.DataReference, bool, error) {
	var ref *memoryv1.DataReference
	expired := false
	_, err := s.log.Load(ctx, events.ScopeSubject(Kind, id), 0, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return err
		}
		evs, err := s.codec.Unpack(b)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case *memoryv1.DataStored:
				ref = ev.GetRef()
			case *memoryv1.DataExpired:
				expired = true
			}
		}
		return nil
	})
	return ref, expired, err
}

// appendEvent appends one EventBatch holding ev on mem.ev.data.<id>,
// retrying an unknown outcome with the same arguments.
func (s *Store) appendEvent(ctx context.Context, id string, expectedLastSeq, version uint64, commandID, msgID string, ev proto.Message) (uint64, error) {
	packed, err := s.codec.Pack([]proto.Message{ev})
	if err != nil {
		return 0, fmt.Errorf("largedata: %s: %w", id, err)
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId:     commandID,
		AggregateKind: Kind,
		AggregateId:   id,
		Version:       version,
		TimeUnixNano:  s.now().UnixNano(),
		SchemaVersion: events.SchemaVersion,
		Events:        packed,
	})
	if err != nil {
		return 0, err
	}
	subject := events.ScopeSubject(Kind, id)
	for attempt := 1; ; attempt++ {
		res, err := s.log.Append(ctx, subject, expectedLastSeq, msgID, data)
		if err == nil {
			return res.Seq, nil
		}
		if !errors.Is(err, events.ErrUnknownOutcome) || attempt == appendAttempts || ctx.Err() != nil {
			return 0, fmt.Errorf("largedata: append %T for %s: %w", ev, id, err)
		}
	}
}

// storedMsgID and expiredMsgID are the Nats-Msg-Id values of the two events.
func storedMsgID(id string) string  { return Kind + "." + id }
func expiredMsgID(id string) string { return Kind + "." + id + "." + expireCommand }

func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("largedata: random id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// checkID accepts the ids Put makes: 32 lowercase hex digits.
func checkID(id string) error {
	if len(id) != 32 {
		return fmt.Errorf("%w: malformed id %q", ErrNotFound, id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: malformed id %q", ErrNotFound, id)
		}
	}
	return nil
}

func encodeRef(ref *memoryv1.DataReference) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ref)
	if err != nil {
		return "", fmt.Errorf("largedata: encode reference %s: %w", ref.GetId(), err)
	}
	if len(b) > maxRefBytes {
		return "", fmt.Errorf("%w: reference of %s (content type and metadata) is %d bytes, limit %d", ErrTooLarge, ref.GetId(), len(b), maxRefBytes)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// refOf decodes the reference kept in an object's metadata.
func refOf(info *jetstream.ObjectInfo) (*memoryv1.DataReference, error) {
	enc, ok := info.Metadata[refMetaKey]
	if !ok {
		return nil, fmt.Errorf("%w: %s: object has no %s metadata", ErrCorrupt, info.Name, refMetaKey)
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reference metadata: %v", ErrCorrupt, info.Name, err)
	}
	ref := new(memoryv1.DataReference)
	if err := proto.Unmarshal(b, ref); err != nil {
		return nil, fmt.Errorf("%w: %s: reference metadata: %v", ErrCorrupt, info.Name, err)
	}
	if ref.GetId() != info.Name {
		return nil, fmt.Errorf("%w: object %s carries the reference of %s", ErrCorrupt, info.Name, ref.GetId())
	}
	return ref, nil
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
