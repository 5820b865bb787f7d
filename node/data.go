package node

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/largedata"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// dataStore maps largedata's errors to API codes: a corrupt object is
// reported (500) and its bytes are never returned. A put, a part or a
// commit is refused at once (503) while the storage watch w says the log
// is unavailable, or when it would leave less than --min-free-bytes free
// (the object store is on the data dir's disk).
type dataStore struct {
	s *largedata.Store
	w *storageWatch
	// max is the store's largest object (largedata.Config.MaxBytes): a
	// larger one is answered 413 by the store, not counted against the
	// disk.
	max int64
}

// reckon is what a request of size bytes is checked against the disk for.
func (d dataStore) reckon(size uint64) uint64 {
	if size > uint64(max(d.max, 0)) {
		return 0
	}
	return size
}

var _ api.DataStore = dataStore{}

func mapDataErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, largedata.ErrNotFound):
		return &api.Error{Code: 404, Field: "id", Message: err.Error()}
	case errors.Is(err, largedata.ErrExpired):
		return &api.Error{Code: 404, Field: "id", Message: err.Error()}
	case errors.Is(err, largedata.ErrUploadNotFound):
		return &api.Error{Code: 404, Field: "upload_id", Message: err.Error()}
	case errors.Is(err, largedata.ErrTooLarge):
		return &api.Error{Code: 413, Field: "data", Message: err.Error()}
	case errors.Is(err, largedata.ErrInvalidArgument):
		return &api.Error{Code: 400, Field: "data", Message: err.Error()}
	case errors.Is(err, largedata.ErrCorrupt):
		return &api.Error{Code: 500, Field: "id", Message: err.Error()}
	}
	return &api.Error{Code: 503, Message: err.Error()}
}

func (d dataStore) Put(ctx context.Context, owner string, data []byte, ct string, md map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error) {
	if err := d.w.refuseData(d.reckon(uint64(len(data))), "a put"); err != nil {
		return nil, 0, &api.Error{Code: 503, Message: err.Error()}
	}
	ref, seq, err := d.s.PutOwned(ctx, owner, data, ct, md, ttl)
	return ref, seq, mapDataErr(err)
}

func (d dataStore) PutPart(ctx context.Context, owner, upload string, offset uint64, data []byte) (string, uint64, error) {
	if err := d.w.refuseData(d.reckon(uint64(len(data))), "an upload's part"); err != nil {
		return "", 0, &api.Error{Code: 503, Message: err.Error()}
	}
	id, received, err := d.s.PutPart(ctx, owner, upload, offset, data)
	return id, received, fieldErr(mapDataErr(err), 400, "offset")
}

func (d dataStore) Commit(ctx context.Context, owner, upload string, size uint64, ct string, md map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error) {
	// The commit stores the parts again as one object (the parts are
	// deleted after).
	if err := d.w.refuseData(d.reckon(size), "an upload's commit"); err != nil {
		return nil, 0, &api.Error{Code: 503, Message: err.Error()}
	}
	ref, seq, err := d.s.Commit(ctx, owner, upload, size, ct, md, ttl)
	return ref, seq, fieldErr(mapDataErr(err), 400, "size")
}

func (d dataStore) GetRange(ctx context.Context, id string, offset, length uint64) (*memoryv1.DataReference, []byte, error) {
	ref, b, err := d.s.GetRange(ctx, id, offset, length)
	return ref, b, fieldErr(mapDataErr(err), 400, "offset")
}

// fieldErr names field in a mapped error of the given code.
func fieldErr(err error, code int, field string) error {
	var e *api.Error
	if errors.As(err, &e) && e.Code == code {
		e.Field = field
	}
	return err
}

// sessionHolder holds large data a session stored (a tool result offloaded
// by its append, owner "session:<id>") past its lease while that session is
// in the projection and not terminated: the session's messages refer to it.
// Once the session is terminated (or gone from the projection), the data
// lives out its lease and the sweep removes it. Data a principal put
// (mem.v1.data.put) lives exactly its lease.
type sessionHolder struct {
	s interface {
		Session(id string) (*memoryv1.SessionIndexEntry, bool, error)
	}
}

var _ largedata.Holder = sessionHolder{}

func (h sessionHolder) Held(_ context.Context, ref *memoryv1.DataReference) (bool, error) {
	id, ok := strings.CutPrefix(ref.GetOwner(), "session:")
	if !ok {
		return false, nil
	}
	e, found, err := h.s.Session(id)
	if err != nil {
		return false, err
	}
	return found && e.GetStatus() != memoryv1.SessionStatus_SESSION_STATUS_TERMINATED, nil
}

// Erase erases large data id (api.DataStore).
func (d dataStore) Erase(ctx context.Context, id string, base *memoryv1.LogRemoval) (uint64, uint64, error) {
	return d.s.Erase(ctx, id, base)
}
