package node

import (
	"context"
	"errors"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/largedata"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// dataStore maps largedata's errors to API codes: a corrupt object is
// reported (500) and its bytes are never returned. A put while the storage
// watch w says the log is unavailable is refused at once (503).
type dataStore struct {
	s *largedata.Store
	w *storageWatch
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
	if err := d.w.refuse(false); err != nil {
		return nil, 0, &api.Error{Code: 503, Message: err.Error()}
	}
	ref, seq, err := d.s.PutOwned(ctx, owner, data, ct, md, ttl)
	return ref, seq, mapDataErr(err)
}

func (d dataStore) Get(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error) {
	ref, b, err := d.s.Get(ctx, id)
	return ref, b, mapDataErr(err)
}
