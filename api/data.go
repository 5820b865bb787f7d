package api

import (
	"context"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/dataop"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Large data: mem.v1.data.put, upload and get, and the offload of large
// tool results an append carries. What each may ask, the quota and who
// may read what are package dataop's; here the bodies are read and the
// operations run beside the subscription.

// DataStore keeps large data (dataop.Store).
type DataStore = dataop.Store

// DefaultLargeToolResultBytes is the size above which a tool result is stored
// as large data and only its reference is kept in the message and the budget.
const DefaultLargeToolResultBytes = 100 << 10

// MaxDataReply is the most bytes of data one data.get reply carries
// (dataop.MaxReply).
func MaxDataReply(maxPayload int64, asJSON bool) uint64 { return dataop.MaxReply(maxPayload, asJSON) }

// DataCommitAllowance is the time a data.put that commits an upload of n
// bytes may take beyond the query timeout (dataop.CommitAllowance).
func DataCommitAllowance(n uint64) time.Duration { return dataop.CommitAllowance(n) }

// ReferenceText is what a message holding large data says in the context.
func ReferenceText(ref *memoryv1.DataReference) string { return dataop.ReferenceText(ref) }

// dataOps are the large-data operations over this service's store.
func (s *Service) dataOps() dataop.Ops {
	o := dataop.Ops{Store: s.data, Logger: s.logger, Denied: s.Denied,
		ReadSession: func(ctx context.Context, who *tenancy.Caller, id string) error {
			return s.checkSession(ctx, who, id, false)
		}}
	if s.rm != nil {
		o.Read = s.rm
	}
	return o
}

// dataUpload stores one part of an upload (mem.v1.data.upload).
func (s *Service) dataUpload(c *call) {
	req := &memoryv1.UploadDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := dataop.CheckUpload(req); err != nil {
		c.fail(err)
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) { reply(s.dataOps().Upload(ctx, c.who, req)) })
}

// dataPut stores data, or commits an upload (mem.v1.data.put).
func (s *Service) dataPut(c *call) {
	req := &memoryv1.PutDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := dataop.CheckPut(req); err != nil {
		c.fail(err)
		return
	}
	s.goQueryFor(c, s.cfg.QueryTimeout+DataCommitAllowance(req.GetSize()), func(ctx context.Context, reply actors.ReplyFunc) {
		reply(s.dataOps().Put(ctx, c.who, req))
	})
}

// dataGet reads a range of data (mem.v1.data.get).
func (s *Service) dataGet(c *call) {
	req := &memoryv1.GetDataRequest{}
	if !s.readBody(c, req) {
		return
	}
	most := MaxDataReply(s.cfg.MaxPayload, c.asJSON)
	if err := dataop.CheckGet(req, most); err != nil {
		c.fail(err)
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) { reply(s.dataOps().Get(ctx, c.who, req, most)) })
}

// needsOffload reports whether req has a tool result to store as large data.
func (s *Service) needsOffload(req *memoryv1.AppendRequest) bool {
	return s.data != nil && dataop.NeedsOffload(req, s.cfg.LargeToolResultBytes)
}

// offload stores each large tool result of req as large data (dataop.Ops.Offload).
func (s *Service) offload(ctx context.Context, sessionID string, req *memoryv1.AppendRequest) (*memoryv1.AppendRequest, error) {
	return s.dataOps().Offload(ctx, sessionID, req, s.cfg.LargeToolResultBytes)
}
