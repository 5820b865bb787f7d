package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// DataStore keeps large data (bytes in the object store, an LRU tier in
// memory); errors it returns are mapped by Classify (wrap them in *Error for
// a specific code).
type DataStore interface {
	// Put stores data owned by owner (DataReference.owner).
	Put(ctx context.Context, owner string, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error)
	// PutPart stores one part of an upload (upload "" begins one) and
	// returns the upload id and the offset after the part.
	PutPart(ctx context.Context, owner, upload string, offset uint64, data []byte) (string, uint64, error)
	// Commit stores the parts of upload, offsets 0..size, as one object.
	Commit(ctx context.Context, owner, upload string, size uint64, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error)
	// GetRange returns the reference and the bytes [offset, offset+length)
	// of id (length 0: to the end).
	GetRange(ctx context.Context, id string, offset, length uint64) (*memoryv1.DataReference, []byte, error)
	// Erase erases id under the removal base names (base.id, target, who,
	// why): its object, its reference's messages and index rows. It
	// returns the removal's completion sequence and the messages removed.
	Erase(ctx context.Context, id string, base *memoryv1.LogRemoval) (seq, messages uint64, err error)
}

// dataReplyHeadroom is kept free in a data.get reply, beside the bytes, for
// the reference (its metadata may take 64 KiB) and the envelope.
const dataReplyHeadroom = 128 << 10

// MaxDataReply is the most bytes of data one data.get reply carries on a
// connection whose max payload is maxPayload: maxPayload less 128 KiB, and
// three quarters of that in JSON (base64). A larger range is refused (413,
// field "length") and read in ranges. Upload parts are bounded by the max
// payload itself.
func MaxDataReply(maxPayload int64, asJSON bool) uint64 {
	n := maxPayload - dataReplyHeadroom
	if asJSON {
		n = n / 4 * 3
	}
	return uint64(max(n, 1))
}

// DataCommitAllowance is the time a data.put that commits an upload of n
// bytes may take beyond the query timeout: 1 s per started 4 MiB (reading
// the parts, hashing, compressing and writing the object).
func DataCommitAllowance(n uint64) time.Duration {
	return time.Duration((n+(4<<20)-1)>>22) * time.Second
}

// dataOwner is the owner of data c's caller puts.
func dataOwner(c *call) string {
	if c.who.Unrestricted {
		return ""
	}
	return "principal:" + c.who.Principal
}

// dataUpload stores one part of an upload (mem.v1.data.upload). The quota
// is checked against the bytes sent so far, so an upload that cannot fit is
// refused at its first part past the limit, not at the commit.
func (s *Service) dataUpload(c *call) {
	asJSON, rp := c.asJSON, c.rp
	req := &memoryv1.UploadDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	if len(req.GetData()) == 0 {
		respondError(rp, asJSON, &Error{Code: 400, Field: "data", Message: "an upload part must not be empty"})
		return
	}
	if req.GetUploadId() == "" && req.GetOffset() != 0 {
		respondError(rp, asJSON, &Error{Code: 400, Field: "offset", Message: fmt.Sprintf("%d: a new upload (no upload_id) starts at offset 0", req.GetOffset())})
		return
	}
	owner := dataOwner(c)
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		if err := s.checkDataQuota(c.who, owner, req.GetOffset()+uint64(len(req.GetData()))); err != nil {
			reply(nil, err)
			return
		}
		id, received, err := s.data.PutPart(ctx, owner, req.GetUploadId(), req.GetOffset(), req.GetData())
		if err != nil {
			reply(nil, err)
			return
		}
		reply(&memoryv1.UploadDataReply{UploadId: id, Received: received}, nil)
	})
}

func (s *Service) dataPut(c *call) {
	asJSON, rp := c.asJSON, c.rp
	req := &memoryv1.PutDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	if t := req.GetTtlSeconds(); t < 0 || t > sharedmem.MaxTTLSeconds {
		respondError(rp, asJSON, &Error{Code: 400, Field: "ttl_seconds", Message: fmt.Sprintf("%d: must be in [0, %d] seconds", t, sharedmem.MaxTTLSeconds)})
		return
	}
	upload := req.GetUploadId() != ""
	switch {
	case upload && len(req.GetData()) != 0:
		respondError(rp, asJSON, &Error{Code: 400, Field: "data", Message: "must be empty when upload_id commits an upload"})
		return
	case upload && req.GetSize() == 0:
		respondError(rp, asJSON, &Error{Code: 400, Field: "size", Message: "the total bytes of the upload are required with upload_id"})
		return
	case !upload && req.GetSize() != 0:
		respondError(rp, asJSON, &Error{Code: 400, Field: "size", Message: "only with upload_id"})
		return
	}
	owner := dataOwner(c)
	ttl := time.Duration(req.GetTtlSeconds()) * time.Second
	s.goQueryFor(c, s.cfg.QueryTimeout+DataCommitAllowance(req.GetSize()), func(ctx context.Context, reply actors.ReplyFunc) {
		size := uint64(len(req.GetData()))
		if upload {
			size = req.GetSize()
		}
		if err := s.checkDataQuota(c.who, owner, size); err != nil {
			reply(nil, err)
			return
		}
		var ref *memoryv1.DataReference
		var seq uint64
		var err error
		if upload {
			ref, seq, err = s.data.Commit(ctx, owner, req.GetUploadId(), size, req.GetContentType(), req.GetMetadata(), ttl)
		} else {
			ref, seq, err = s.data.Put(ctx, owner, req.GetData(), req.GetContentType(), req.GetMetadata(), ttl)
		}
		if err != nil {
			reply(nil, err)
			return
		}
		if s.rm != nil && !c.who.Admin() {
			// The quota reads the projection: answer once it counts this
			// put, so the caller's next put sees it. A failed wait does
			// not undo the put (it is stored); the reply says so.
			if err := s.rm.WaitFor(ctx, seq); err != nil {
				s.logger.Warn("data.put: stored, but the projection has not counted it yet", "id", ref.GetId(), "err", err)
			}
		}
		reply(&memoryv1.PutDataReply{Ref: ref, Seq: seq}, nil)
	})
}

// checkDataQuota refuses (413 max_data_bytes) a data.put of n bytes that
// would take what owner holds past who's limit. The count comes from the
// projection (every DataStored and DataExpired applied), and a put is
// answered only once it is counted, so one caller's sequential puts are
// bounded exactly; puts in flight at the same time may pass the bound by
// what they carry (at most max_concurrent_queries puts). Admins and the
// single-user node are not bounded.
func (s *Service) checkDataQuota(who *tenancy.Caller, owner string, n uint64) error {
	if s.rm == nil || who.Admin() {
		return nil
	}
	held, err := s.rm.DataBytes(owner)
	if err != nil {
		return err
	}
	if limit := who.Limits.MaxDataBytes; n > uint64(limit) || held+int64(n) > limit {
		return &Error{Code: 413, Field: "max_data_bytes", Message: fmt.Sprintf("this caller holds %d bytes of large data; %d more would pass its %d", held, n, limit)}
	}
	return nil
}

func (s *Service) dataGet(c *call) {
	asJSON, rp := c.asJSON, c.rp
	req := &memoryv1.GetDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := events.ValidateID("id", req.GetId()); err != nil {
		respondError(rp, asJSON, Classify(err))
		return
	}
	most := MaxDataReply(s.cfg.MaxPayload, asJSON)
	if req.GetLength() > most {
		respondError(rp, asJSON, &Error{Code: 413, Field: "length", Message: fmt.Sprintf("%d bytes do not fit one reply: at most %d; read in ranges", req.GetLength(), most)})
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		ref, data, err := s.data.GetRange(ctx, req.GetId(), req.GetOffset(), req.GetLength())
		if err != nil {
			reply(nil, err)
			return
		}
		if err := s.checkData(ctx, c.who, ref); err != nil {
			reply(nil, err)
			return
		}
		if uint64(len(data)) > most {
			reply(nil, &Error{Code: 413, Field: "length", Message: fmt.Sprintf("%s: %d bytes from offset %d do not fit one reply (at most %d): read it in ranges with offset and length",
				req.GetId(), len(data), req.GetOffset(), most)})
			return
		}
		reply(&memoryv1.GetDataReply{Ref: ref, Data: data}, nil)
	})
}

// checkData checks that who may read ref: data a session stored follows
// that session; data a principal put is that principal's.
func (s *Service) checkData(ctx context.Context, who *tenancy.Caller, ref *memoryv1.DataReference) error {
	if who.Admin() {
		return nil
	}
	if sid, ok := strings.CutPrefix(ref.GetOwner(), "session:"); ok {
		return s.checkSession(ctx, who, sid, false)
	}
	owner, _ := strings.CutPrefix(ref.GetOwner(), "principal:")
	if err := who.Data(ref.GetId(), owner); err != nil {
		s.metrics.Denied.WithLabelValues("data").Inc()
		return err
	}
	return nil
}
