package api

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// DataStore keeps large data (bytes in the object store, an LRU tier in
// memory); errors it returns are mapped by classify (wrap them in *Error for
// a specific code).
type DataStore interface {
	Put(ctx context.Context, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, uint64, error)
	Get(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error)
}

// addDataEndpoints registers mem.v1.data.{put,get} (when Data is set).
func (s *Service) addDataEndpoints(add func(name, subject string, h micro.HandlerFunc) error) error {
	if s.data == nil {
		return nil
	}
	if err := add("data_put", "mem.v1.data.put", s.dataPut); err != nil {
		return err
	}
	return add("data_get", "mem.v1.data.get", s.dataGet)
}

func (s *Service) dataPut(r micro.Request) {
	asJSON, rp := wantsJSON(r.Headers()), s.replyTo(r)
	req := &memoryv1.PutDataRequest{}
	if !s.readBody(r, rp, asJSON, req) {
		return
	}
	if req.GetTtlSeconds() < 0 {
		respondError(rp, asJSON, &Error{Code: 400, Field: "ttl_seconds", Message: fmt.Sprintf("%d: must be >= 0", req.GetTtlSeconds())})
		return
	}
	s.goQuery(rp, asJSON, func(ctx context.Context, reply actors.ReplyFunc) {
		ref, seq, err := s.data.Put(ctx, req.GetData(), req.GetContentType(), req.GetMetadata(), time.Duration(req.GetTtlSeconds())*time.Second)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(&memoryv1.PutDataReply{Ref: ref, Seq: seq}, nil)
	})
}

func (s *Service) dataGet(r micro.Request) {
	asJSON, rp := wantsJSON(r.Headers()), s.replyTo(r)
	req := &memoryv1.GetDataRequest{}
	if !s.readBody(r, rp, asJSON, req) {
		return
	}
	if err := events.ValidateID("id", req.GetId()); err != nil {
		respondError(rp, asJSON, classify(err))
		return
	}
	s.goQuery(rp, asJSON, func(ctx context.Context, reply actors.ReplyFunc) {
		ref, data, err := s.data.Get(ctx, req.GetId())
		if err != nil {
			reply(nil, err)
			return
		}
		reply(&memoryv1.GetDataReply{Ref: ref, Data: data}, nil)
	})
}
