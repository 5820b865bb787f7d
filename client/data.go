package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// maxDataPart is the largest part of data the client sends or asks for in
// one request: 4 MiB, or half the server's max payload when that is less.
const maxDataPart = 4 << 20

func (c *Client) dataPart() int {
	return int(min(maxDataPart, c.nc.MaxPayload()/2))
}

// PutData stores data as large data and returns its reference. A zero ttl
// uses the node's default lease; the lease is counted in whole seconds.
//
// Data larger than one part (4 MiB, or half the server's max payload) is
// sent in parts on mem.v1.data.upload and committed with mem.v1.data.put;
// nothing is readable until the commit, and parts of an upload that fails
// midway expire on the node. The node's limit (64 MiB by default) is
// refused with a 413 *Error naming it.
func (c *Client) PutData(ctx context.Context, data []byte, contentType string, metadata map[string]string, ttl time.Duration) (*memoryv1.DataReference, error) {
	req := &memoryv1.PutDataRequest{ContentType: contentType, Metadata: metadata, TtlSeconds: int64(ttl / time.Second)}
	if part := c.dataPart(); len(data) <= part {
		req.Data = data
	} else {
		var up memoryv1.UploadDataReply
		for off := 0; off < len(data); off += part {
			end := min(off+part, len(data))
			preq := &memoryv1.UploadDataRequest{UploadId: up.GetUploadId(), Offset: uint64(off), Data: data[off:end]}
			if err := c.call(ctx, "mem.v1.data.upload", preq, &up); err != nil {
				return nil, err
			}
		}
		req.UploadId, req.Size = up.GetUploadId(), uint64(len(data))
	}
	reply := &memoryv1.PutDataReply{}
	// A commit may take the node 1 s per 4 MiB beyond a query's timeout
	// (api.DataCommitAllowance); the wait for its reply allows as much.
	cc := c.WithTimeout(c.timeout + time.Duration((req.GetSize()+(4<<20)-1)>>22)*time.Second)
	if err := cc.call(ctx, "mem.v1.data.put", req, reply); err != nil {
		return nil, err
	}
	c.recordSeq(reply.GetSeq())
	return reply.GetRef(), nil
}

// GetData returns large data id and its reference. The node verifies the
// checksum of bytes read from disk: corrupt data is a 500 *Error, never
// bytes. Data larger than one part is read in ranges and its sha256 checked
// against the reference once whole; data that expired is a 404 *Error
// saying so.
func (c *Client) GetData(ctx context.Context, id string) (*memoryv1.DataReference, []byte, error) {
	part := uint64(c.dataPart())
	reply := &memoryv1.GetDataReply{}
	if err := c.call(ctx, "mem.v1.data.get", &memoryv1.GetDataRequest{Id: id, Length: part}, reply); err != nil {
		return nil, nil, err
	}
	ref, data := reply.GetRef(), reply.GetData()
	if uint64(len(data)) >= ref.GetSize() {
		return ref, data, nil
	}
	whole := make([]byte, len(data), ref.GetSize())
	copy(whole, data)
	for uint64(len(whole)) < ref.GetSize() {
		reply := &memoryv1.GetDataReply{}
		if err := c.call(ctx, "mem.v1.data.get", &memoryv1.GetDataRequest{Id: id, Offset: uint64(len(whole)), Length: part}, reply); err != nil {
			return nil, nil, err
		}
		if len(reply.GetData()) == 0 {
			return nil, nil, fmt.Errorf("agentmem: data.get %s: no bytes at offset %d of %d", id, len(whole), ref.GetSize())
		}
		whole = append(whole, reply.GetData()...)
	}
	if sum := sha256.Sum256(whole); hex.EncodeToString(sum[:]) != ref.GetSha256() || uint64(len(whole)) != ref.GetSize() {
		return nil, nil, fmt.Errorf("agentmem: data.get %s: the ranges read hash to %x (%d bytes), the reference says %s (%d bytes)",
			id, sum, len(whole), ref.GetSha256(), ref.GetSize())
	}
	return ref, whole, nil
}
