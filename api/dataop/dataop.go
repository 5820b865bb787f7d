// Package dataop is large data's operations as the API serves them
// (mem.v1.data.put, upload and get) and the offload of large tool
// results an append carries: what a request may ask, the caller's quota,
// who may read what, and how much one reply carries. Package api checks
// the caller may write data, reads the body and answers; the bytes are the
// Store's (the node's large-data store).
package dataop

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api/wire"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Store keeps large data (bytes in the object store, an LRU tier in
// memory); errors it returns are classified as the API classifies every
// error (wrap them in a wire.Error for a specific code).
type Store interface {
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

// replyHeadroom is kept free in a data.get reply, beside the bytes, for
// the reference (its metadata may take 64 KiB) and the envelope.
const replyHeadroom = 128 << 10

// MaxReply is the most bytes of data one data.get reply carries on a
// connection whose max payload is maxPayload: maxPayload less 128 KiB, and
// three quarters of that in JSON (base64). A larger range is refused (413,
// field "length") and read in ranges. Upload parts are bounded by the max
// payload itself.
func MaxReply(maxPayload int64, asJSON bool) uint64 {
	n := maxPayload - replyHeadroom
	if asJSON {
		n = n / 4 * 3
	}
	return uint64(max(n, 1))
}

// CommitAllowance is the time a data.put that commits an upload of n
// bytes may take beyond the query timeout: 1 s per started 4 MiB (reading
// the parts, hashing, compressing and writing the object).
func CommitAllowance(n uint64) time.Duration {
	return time.Duration((n+(4<<20)-1)>>22) * time.Second
}

// Ops serves the large-data operations over a Store.
type Ops struct {
	Store Store
	// Read is the projection (nil: none on this node, and no quota).
	Read interface {
		WaitFor(ctx context.Context, seq uint64) error
		// DataBytes is the sum of the sizes of owner's large data held.
		DataBytes(owner string) (int64, error)
	}
	Logger *slog.Logger
	// ReadSession checks who may read session id (data a session stored
	// follows it); Denied counts a refusal by its family.
	ReadSession func(ctx context.Context, who *tenancy.Caller, id string) error
	Denied      func(family string)
}

// owner is the owner of data who puts.
func owner(who *tenancy.Caller) string {
	if who.Unrestricted {
		return ""
	}
	return "principal:" + who.Principal
}

// CheckUpload checks an upload part's request.
func CheckUpload(req *memoryv1.UploadDataRequest) error {
	switch {
	case len(req.GetData()) == 0:
		return &wire.Error{Code: 400, Field: "data", Message: "an upload part must not be empty"}
	case req.GetUploadId() == "" && req.GetOffset() != 0:
		return &wire.Error{Code: 400, Field: "offset", Message: fmt.Sprintf("%d: a new upload (no upload_id) starts at offset 0", req.GetOffset())}
	}
	return nil
}

// Upload stores one part of an upload. The quota is checked against the
// bytes sent so far, so an upload that cannot fit is refused at its first
// part past the limit, not at the commit.
func (o Ops) Upload(ctx context.Context, who *tenancy.Caller, req *memoryv1.UploadDataRequest) (*memoryv1.UploadDataReply, error) {
	if err := o.quota(who, req.GetOffset()+uint64(len(req.GetData()))); err != nil {
		return nil, err
	}
	id, received, err := o.Store.PutPart(ctx, owner(who), req.GetUploadId(), req.GetOffset(), req.GetData())
	if err != nil {
		return nil, err
	}
	return &memoryv1.UploadDataReply{UploadId: id, Received: received}, nil
}

// CheckPut checks a put's request: bytes, or the commit of an upload of
// size bytes.
func CheckPut(req *memoryv1.PutDataRequest) error {
	upload := req.GetUploadId() != ""
	switch t := req.GetTtlSeconds(); {
	case t < 0 || t > sharedmem.MaxTTLSeconds:
		return &wire.Error{Code: 400, Field: "ttl_seconds", Message: fmt.Sprintf("%d: must be in [0, %d] seconds", t, sharedmem.MaxTTLSeconds)}
	case upload && len(req.GetData()) != 0:
		return &wire.Error{Code: 400, Field: "data", Message: "must be empty when upload_id commits an upload"}
	case upload && req.GetSize() == 0:
		return &wire.Error{Code: 400, Field: "size", Message: "the total bytes of the upload are required with upload_id"}
	case !upload && req.GetSize() != 0:
		return &wire.Error{Code: 400, Field: "size", Message: "only with upload_id"}
	}
	return nil
}

// Put stores a put's bytes, or commits its upload, and answers once the
// projection counts it (the quota reads the projection, so the caller's
// next put sees it; a failed wait does not undo the put, which is stored).
func (o Ops) Put(ctx context.Context, who *tenancy.Caller, req *memoryv1.PutDataRequest) (*memoryv1.PutDataReply, error) {
	upload, size := req.GetUploadId() != "", uint64(len(req.GetData()))
	if upload {
		size = req.GetSize()
	}
	if err := o.quota(who, size); err != nil {
		return nil, err
	}
	var (
		ref *memoryv1.DataReference
		seq uint64
		err error
		ttl = time.Duration(req.GetTtlSeconds()) * time.Second
	)
	if upload {
		ref, seq, err = o.Store.Commit(ctx, owner(who), req.GetUploadId(), size, req.GetContentType(), req.GetMetadata(), ttl)
	} else {
		ref, seq, err = o.Store.Put(ctx, owner(who), req.GetData(), req.GetContentType(), req.GetMetadata(), ttl)
	}
	if err != nil {
		return nil, err
	}
	if o.Read != nil && !who.Admin() {
		if err := o.Read.WaitFor(ctx, seq); err != nil {
			o.Logger.Warn("data.put: stored, but the projection has not counted it yet", "id", ref.GetId(), "err", err)
		}
	}
	return &memoryv1.PutDataReply{Ref: ref, Seq: seq}, nil
}

// quota refuses (413 max_data_bytes) n bytes more that would take what
// who's puts hold past its limit. The count comes from the projection
// (every DataStored and DataExpired applied), and a put is answered only
// once it is counted, so one caller's sequential puts are bounded
// exactly; puts in flight at the same time may pass the bound by what they
// carry (at most max_concurrent_queries puts). Admins and the single-user
// node are not bounded.
func (o Ops) quota(who *tenancy.Caller, n uint64) error {
	if o.Read == nil || who.Admin() {
		return nil
	}
	held, err := o.Read.DataBytes(owner(who))
	if err != nil {
		return err
	}
	if limit := who.Limits.MaxDataBytes; n > uint64(limit) || held+int64(n) > limit {
		return &wire.Error{Code: 413, Field: "max_data_bytes", Message: fmt.Sprintf("this caller holds %d bytes of large data; %d more would pass its %d", held, n, limit)}
	}
	return nil
}

// CheckGet checks a get's request, whose reply carries at most most bytes.
func CheckGet(req *memoryv1.GetDataRequest, most uint64) error {
	if err := events.ValidateID("id", req.GetId()); err != nil {
		return err
	}
	if req.GetLength() > most {
		return &wire.Error{Code: 413, Field: "length", Message: fmt.Sprintf("%d bytes do not fit one reply: at most %d; read in ranges", req.GetLength(), most)}
	}
	return nil
}

// Get reads a range of data who may read, in a reply of at most most bytes.
func (o Ops) Get(ctx context.Context, who *tenancy.Caller, req *memoryv1.GetDataRequest, most uint64) (*memoryv1.GetDataReply, error) {
	ref, data, err := o.Store.GetRange(ctx, req.GetId(), req.GetOffset(), req.GetLength())
	if err != nil {
		return nil, err
	}
	if err := o.mayRead(ctx, who, ref); err != nil {
		return nil, err
	}
	if uint64(len(data)) > most {
		return nil, &wire.Error{Code: 413, Field: "length", Message: fmt.Sprintf("%s: %d bytes from offset %d do not fit one reply (at most %d): read it in ranges with offset and length",
			req.GetId(), len(data), req.GetOffset(), most)}
	}
	return &memoryv1.GetDataReply{Ref: ref, Data: data}, nil
}

// mayRead checks that who may read ref: data a session stored follows
// that session; data a principal put is that principal's.
func (o Ops) mayRead(ctx context.Context, who *tenancy.Caller, ref *memoryv1.DataReference) error {
	if who.Admin() {
		return nil
	}
	if sid, ok := strings.CutPrefix(ref.GetOwner(), "session:"); ok {
		return o.ReadSession(ctx, who, sid)
	}
	p, _ := strings.CutPrefix(ref.GetOwner(), "principal:")
	if err := who.Data(ref.GetId(), p); err != nil {
		o.Denied("data")
		return err
	}
	return nil
}

// NeedsOffload reports whether req has a tool result over limit bytes to
// store as large data.
func NeedsOffload(req *memoryv1.AppendRequest, limit int) bool {
	for _, m := range req.GetMessages() {
		if m.GetRole() == memoryv1.Role_ROLE_TOOL && m.GetDataRef() == nil && len(m.GetContent()) > limit {
			return true
		}
	}
	return false
}

// Offload stores each tool result of req over limit bytes as large data of
// session sessionID and replaces its content with a reference text (~50
// tokens). A retried append (same command id) stores the bytes again under
// a new id; the duplicate command is then answered from the session and
// the extra copy expires with its lease.
func (o Ops) Offload(ctx context.Context, sessionID string, req *memoryv1.AppendRequest, limit int) (*memoryv1.AppendRequest, error) {
	out := proto.Clone(req).(*memoryv1.AppendRequest)
	for i, m := range out.GetMessages() {
		if m.GetRole() != memoryv1.Role_ROLE_TOOL || m.GetDataRef() != nil || len(m.GetContent()) <= limit {
			continue
		}
		ref, _, err := o.Store.Put(ctx, "session:"+sessionID, []byte(m.GetContent()), "text/plain; charset=utf-8",
			map[string]string{"tool_call_id": m.GetToolCallId(), "name": m.GetName()}, 0)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: store as large data: %w", i, err)
		}
		m.DataRef = ref
		m.Content = ReferenceText(ref)
	}
	return out, nil
}

// ReferenceText is what a message holding large data says in the context.
func ReferenceText(ref *memoryv1.DataReference) string {
	sha := ref.GetSha256()
	if len(sha) > 16 {
		sha = sha[:16]
	}
	return fmt.Sprintf("[tool result stored as large data %s: %d bytes, sha256 %s; fetch it with mem.v1.data.get]", ref.GetId(), ref.GetSize(), sha)
}
