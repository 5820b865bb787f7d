package largedata

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Upload object names and metadata in the uploads bucket (see doc.go).
const (
	partMetaOwner = "agentmem-owner"
	doneMetaSeq   = "agentmem-seq"
	doneSuffix    = ".ref"
)

// partName is the object holding the part of upload that starts at offset:
// fixed-width hex so names sort in offset order.
func partName(upload string, offset uint64) string {
	return fmt.Sprintf("%s.%016x", upload, offset)
}

// PutPart stores one part of an upload: data that starts at offset of the
// whole. An empty upload id begins a new upload (offset must be 0) and the
// returned id names it. A part sent again at the same offset replaces the
// earlier one. Parts are never readable through Get; they are read by
// Commit, and those never committed expire with the uploads bucket's TTL
// (Config.UploadTTL).
//
// The whole may not pass Config.MaxBytes: a part that ends past it is
// ErrTooLarge. Gaps and overlaps are found by Commit.
func (s *Store) PutPart(ctx context.Context, owner, upload string, offset uint64, data []byte) (string, uint64, error) {
	if upload == "" {
		if offset != 0 {
			return "", 0, fmt.Errorf("%w: a new upload starts at offset 0, not %d", ErrInvalidArgument, offset)
		}
		id, err := newID()
		if err != nil {
			return "", 0, err
		}
		upload = id
	} else if err := checkID(upload); err != nil {
		return "", 0, fmt.Errorf("%w: upload %q", ErrUploadNotFound, upload)
	}
	if len(data) == 0 {
		return "", 0, fmt.Errorf("%w: an upload part must not be empty", ErrInvalidArgument)
	}
	end := offset + uint64(len(data))
	if end > uint64(s.cfg.MaxBytes) || end < offset {
		return "", 0, fmt.Errorf("%w: a part ending at byte %d passes the limit of %d bytes", ErrTooLarge, end, s.cfg.MaxBytes)
	}
	if _, err := s.up.Put(ctx, jetstream.ObjectMeta{
		Name:     partName(upload, offset),
		Metadata: map[string]string{partMetaOwner: owner},
	}, bytes.NewReader(data)); err != nil {
		return "", 0, fmt.Errorf("largedata: upload %s: put part at %d: %w", upload, offset, err)
	}
	return upload, end, nil
}

// Commit stores the parts of upload, offsets 0 to size, as one object
// exactly like PutOwned, and returns its reference and DataStored sequence.
// Every part must have been sent by owner. A missing part, a part that
// overlaps the previous one or a total other than size is
// ErrInvalidArgument (the upload stays, and can be completed); an upload
// whose parts are gone (expired, never sent) is ErrUploadNotFound.
//
// A Commit retried after one succeeded returns the same reference: the
// commit leaves a marker object "<upload>.ref" (the reference and sequence
// in its metadata) before it deletes the parts. Two commits of the same
// upload running at the same time may store it twice; the second copy is
// an ordinary object that expires with its lease.
func (s *Store) Commit(ctx context.Context, owner, upload string, size uint64, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error) {
	if err := checkID(upload); err != nil {
		return nil, 0, fmt.Errorf("%w: upload %q", ErrUploadNotFound, upload)
	}
	if ref, seq, ok, err := s.committed(ctx, owner, upload); err != nil || ok {
		return ref, seq, err
	}
	if size > uint64(s.cfg.MaxBytes) {
		return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, s.cfg.MaxBytes)
	}
	if size == 0 {
		return nil, 0, fmt.Errorf("%w: upload %s: size must be > 0", ErrInvalidArgument, upload)
	}
	data := make([]byte, 0, size)
	var parts []string
	for uint64(len(data)) < size {
		name := partName(upload, uint64(len(data)))
		err := s.readPart(ctx, owner, name, &data, size)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			if len(data) == 0 {
				return nil, 0, fmt.Errorf("%w: upload %s has no parts (expired, or never sent)", ErrUploadNotFound, upload)
			}
			return nil, 0, fmt.Errorf("%w: upload %s has no part at offset %d (received parts cover 0..%d of %d bytes)", ErrInvalidArgument, upload, len(data), len(data), size)
		}
		if err != nil {
			return nil, 0, err
		}
		parts = append(parts, name)
	}
	ref, seq, err := s.PutOwned(ctx, owner, data, contentType, metadata, ttl)
	if err != nil {
		return nil, 0, err
	}
	if err := s.markCommitted(ctx, owner, upload, ref, seq); err != nil {
		// Stored and answered; only a retry of this commit is affected
		// (it would find no parts or store a second copy).
		s.logger.Warn("largedata: upload committed, marker not written", "upload", upload, "id", ref.GetId(), "err", err)
		return ref, seq, nil
	}
	for _, name := range parts {
		if err := s.up.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			s.logger.Warn("largedata: upload part not deleted (it expires with the bucket's TTL)", "part", name, "err", err)
		}
	}
	return ref, seq, nil
}

// readPart appends the part object name to *data, checking its owner and
// that it does not run past size.
func (s *Store) readPart(ctx context.Context, owner, name string, data *[]byte, size uint64) error {
	res, err := s.up.Get(ctx, name)
	if err != nil {
		return err
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return err
	}
	if info.Metadata[partMetaOwner] != owner {
		// Someone else's upload: answered like one that does not exist.
		return fmt.Errorf("%w: upload part %s", ErrUploadNotFound, name)
	}
	if uint64(len(*data))+info.Size > size {
		return fmt.Errorf("%w: part %s ends at byte %d, past the size %d", ErrInvalidArgument, name, uint64(len(*data))+info.Size, size)
	}
	before := len(*data)
	buf := bytes.NewBuffer(*data)
	if _, err := io.Copy(buf, res); err != nil {
		return fmt.Errorf("largedata: read upload part %s: %w", name, err)
	}
	*data = buf.Bytes()
	if uint64(len(*data)-before) != info.Size {
		return fmt.Errorf("%w: upload part %s: read %d bytes, info says %d", ErrCorrupt, name, len(*data)-before, info.Size)
	}
	return nil
}

// committed returns the reference a finished commit of upload stored.
func (s *Store) committed(ctx context.Context, owner, upload string) (*memoryv1.DataReference, uint64, bool, error) {
	info, err := s.up.GetInfo(ctx, upload+doneSuffix)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("largedata: upload %s: %w", upload, err)
	}
	if info.Metadata[partMetaOwner] != owner {
		return nil, 0, false, fmt.Errorf("%w: upload %s", ErrUploadNotFound, upload)
	}
	b, err := base64.StdEncoding.DecodeString(info.Metadata[refMetaKey])
	ref := new(memoryv1.DataReference)
	if err == nil {
		err = proto.Unmarshal(b, ref)
	}
	seq, serr := strconv.ParseUint(info.Metadata[doneMetaSeq], 10, 64)
	if err != nil || serr != nil {
		return nil, 0, false, fmt.Errorf("%w: upload %s: commit marker: %v %v", ErrCorrupt, upload, err, serr)
	}
	return ref, seq, true, nil
}

func (s *Store) markCommitted(ctx context.Context, owner, upload string, ref *memoryv1.DataReference, seq uint64) error {
	enc, err := encodeRef(ref)
	if err != nil {
		return err
	}
	_, err = s.up.Put(ctx, jetstream.ObjectMeta{
		Name:     upload + doneSuffix,
		Metadata: map[string]string{partMetaOwner: owner, refMetaKey: enc, doneMetaSeq: strconv.FormatUint(seq, 10)},
	}, bytes.NewReader(nil))
	return err
}
