package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/placement"
)

// Internal subjects between the nodes of a cluster, in the service account
// only (tenants import mem.v1.> and reach none of them; the API never
// answers into _AMN.):
//
//	_AMN.fwd.<node>.<request subject>   a request forwarded to its owner
//	_AMN.call.<node>                    a call of one node's API layer on
//	                                    an actor the other node serves
//	_AMN.corpus.<c>                     a read of corpus partition c, answered
//	                                    by a node holding its file (split
//	                                    projections, corpusserve.go)
const internalPrefix = "_AMN."

func forwardSubject(node, subject string) string {
	return internalPrefix + "fwd." + node + "." + subject
}

func callSubject(node string) string { return internalPrefix + "call." + node }

// router forwards requests to the node that serves their aggregate.
type router struct {
	t  *placement.Table
	w  *storageWatch
	nc *nats.Conn
}

var _ api.Router = router{}

func (r router) Serves(id string) bool { return r.t.Serves(id) }

// Alone reports that no other node is live (the service then stops without
// waiting for late requests: there is nowhere to send them).
func (r router) Alone() bool { return r.t.Alone() }

// Forward sends m to the owner of id and returns its reply. An owner that
// no longer listens (it died; its lease has not aged out) means no
// responders: the request was not delivered, so Forward waits for the next
// owner and tries again until ctx ends. A timeout is an unknown outcome and
// is returned (the client retries with the same command id).
//
// The reply carries the header Agentmem-Served-By: the owner's node id.
func (r router) Forward(ctx context.Context, id string, m *nats.Msg) (*nats.Msg, bool, error) {
	var owner string
	reply, local, err := request(ctx, r.t, r.w, id, func(o string) *nats.Msg {
		owner = o
		return &nats.Msg{Subject: forwardSubject(o, m.Subject), Data: m.Data, Header: m.Header}
	}, r.nc)
	if reply != nil {
		if reply.Header == nil {
			reply.Header = nats.Header{}
		}
		reply.Header.Set(ServedByHeader, owner)
	}
	return reply, local, err
}

// ServedByHeader names, on a reply relayed from another node, the node
// that served the request.
const ServedByHeader = "Agentmem-Served-By"

// request sends the message build makes for the owner of id, waiting for an
// owner and past owners that do not listen any more. While the log is
// unavailable (w, when not nil, says so) it does not wait for an owner: no
// node takes a partition without the leases' quorum, so it fails at once
// with errLogUnavailable (503) instead of at the client's timeout. While
// the placement bucket has no quorum the owner is the last one seen (it
// keeps serving), and an owner that does not listen is not waited for
// either: no node can take its partition.
func request(ctx context.Context, t *placement.Table, w *storageWatch, id string, build func(owner string) *nats.Msg, nc *nats.Conn) (*nats.Msg, bool, error) {
	for {
		owner, local, err := ownerOf(ctx, t, w, id)
		if err != nil || local {
			return nil, local, err
		}
		reply, err := nc.RequestMsgWithContext(ctx, build(owner))
		if !errors.Is(err, nats.ErrNoResponders) {
			if err != nil {
				err = fmt.Errorf("node %s: %w", owner, err)
			}
			return reply, false, err
		}
		if w != nil && !w.State().Placement.OK {
			return nil, false, fmt.Errorf("node %s, the last owner seen of %s, does not answer, and no node can take its partition while %w: %s",
				owner, id, placement.ErrBucketLost, w.State().Placement.Detail)
		}
		select {
		case <-ctx.Done():
			return nil, false, fmt.Errorf("node %s does not answer and no other node took its partition yet: %w", owner, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ownerOf is t.Owner, whose wait for an owner ends when the log becomes
// unavailable (errLogUnavailable, wrapping the wait's error).
func ownerOf(ctx context.Context, t *placement.Table, w *storageWatch, id string) (string, bool, error) {
	if w == nil {
		return t.Owner(ctx, id)
	}
	down := w.Down()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(down, cancel)()
	owner, local, err := t.Owner(octx, id)
	if err != nil && ctx.Err() == nil && down.Err() != nil {
		return "", false, w.logUnavailable(w.State(), err)
	}
	return owner, local, err
}
