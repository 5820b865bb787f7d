package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// DataStore keeps large data (bytes in the object store, an LRU tier in
// memory); errors it returns are mapped by Classify (wrap them in *Error for
// a specific code).
type DataStore interface {
	// Put stores data owned by owner (DataReference.owner).
	Put(ctx context.Context, owner string, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error)
	Get(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error)
}

// addDataEndpoints registers mem.v1.data.{put,get} (when Data is set).
func (s *Service) addDataEndpoints(add func(name, subject string, h func(*call)) error) error {
	if s.data == nil {
		return nil
	}
	if err := add("data_put", "mem.v1.data.put", s.dataPut); err != nil {
		return err
	}
	return add("data_get", "mem.v1.data.get", s.dataGet)
}

func (s *Service) dataPut(c *call) {
	r, asJSON, rp := c.r, c.asJSON, c.rp
	req := &memoryv1.PutDataRequest{}
	if !s.readBody(r, rp, asJSON, req) {
		return
	}
	if req.GetTtlSeconds() < 0 {
		respondError(rp, asJSON, &Error{Code: 400, Field: "ttl_seconds", Message: fmt.Sprintf("%d: must be >= 0", req.GetTtlSeconds())})
		return
	}
	if err := c.who.Write("data"); err != nil {
		s.metrics.Denied.WithLabelValues("data").Inc()
		c.fail(err)
		return
	}
	owner := ""
	if !c.who.Unrestricted {
		owner = "principal:" + c.who.Principal
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		if err := s.checkDataQuota(c.who, owner, len(req.GetData())); err != nil {
			reply(nil, err)
			return
		}
		ref, seq, err := s.data.Put(ctx, owner, req.GetData(), req.GetContentType(), req.GetMetadata(), time.Duration(req.GetTtlSeconds())*time.Second)
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
func (s *Service) checkDataQuota(who *tenancy.Caller, owner string, n int) error {
	if s.rm == nil || who.Admin() {
		return nil
	}
	held, err := s.rm.DataBytes(owner)
	if err != nil {
		return err
	}
	if limit := who.Limits.MaxDataBytes; held+int64(n) > limit {
		return &Error{Code: 413, Field: "max_data_bytes", Message: fmt.Sprintf("this caller holds %d bytes of large data; %d more would pass its %d", held, n, limit)}
	}
	return nil
}

func (s *Service) dataGet(c *call) {
	r, asJSON, rp := c.r, c.asJSON, c.rp
	req := &memoryv1.GetDataRequest{}
	if !s.readBody(r, rp, asJSON, req) {
		return
	}
	if err := events.ValidateID("id", req.GetId()); err != nil {
		respondError(rp, asJSON, Classify(err))
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		ref, data, err := s.data.Get(ctx, req.GetId())
		if err != nil {
			reply(nil, err)
			return
		}
		if err := s.checkData(ctx, c.who, ref); err != nil {
			reply(nil, err)
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
