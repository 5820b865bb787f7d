package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/placement"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// placedDispatch sends a command to the actor of an aggregate this node
// serves, and to the node that serves it otherwise. The API forwards each
// request to the owner of the aggregate its subject names, so what reaches
// here for another node's aggregate is a second aggregate the request
// touches (resolve reads the user, app and project scopes of a session;
// publish copies a session entry into the user or project scope;
// consolidation reads the configuration of the scopes a session's facts go
// to, and writes them there).
type placedDispatch struct {
	local   answerBy
	t       *placement.Table
	nc      *nats.Conn
	timeout time.Duration
}

var (
	_ api.Dispatcher      = placedDispatch{}
	_ api.ScopeDispatcher = placedDispatch{}
)

// sessionKind names a session in a remote call (scopes use their kind).
const sessionKind = "session-actor"

func (p placedDispatch) Dispatch(id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	if p.t.Serves(id) {
		return p.local.Dispatch(id, who, body, reply)
	}
	return p.remote(sessionKind, id, who, body, reply)
}

func (p placedDispatch) DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	if p.t.Serves(id) {
		return p.local.DispatchScope(kind, id, who, body, reply)
	}
	return p.remote(string(kind), id, who, body, reply)
}

// dispatchKind hands body to the actor of id on this node: a session's
// when kind is sessionKind, else the scope's of that kind (a remote call's
// Kind).
func (a answerBy) dispatchKind(kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	if kind == sessionKind {
		return a.Dispatch(id, who, body, reply)
	}
	return a.DispatchScope(sharedmem.Kind(kind), id, who, body, reply)
}

// remoteCall is one command for an actor another node serves.
type remoteCall struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Principal names the caller (Node: the node itself, no caller).
	Principal string `json:"principal,omitempty"`
	Node      bool   `json:"node,omitempty"`
	// Type is the body's protobuf full name, or copyEntryType.
	Type      string `json:"type"`
	Body      []byte `json:"body"`
	CommandID string `json:"command_id,omitempty"`
	By        string `json:"by,omitempty"`
}

const (
	copyEntryType = "agentmem.node.CopyEntry"
	// readConfigType is actors.ReadScopeConfig (no body): consolidation
	// reads the configuration of a scope another node may serve.
	readConfigType = "agentmem.node.ReadScopeConfig"
	hdrReplyType   = "Agentmem-Reply-Type"
	hdrError       = "Agentmem-Error"
)

// errMovedRetry answers a command that cannot be carried to another node
// (one the API builds for the aggregate it serves): its partition moved
// between the API's check and the dispatch.
var errMovedRetry = &api.Error{Code: 503, Message: "the aggregate moved to another node while the request was served; retry"}

func (p placedDispatch) remote(kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	c := remoteCall{Kind: kind, ID: id, Node: who == nil}
	if who != nil {
		c.Principal = who.Principal
	}
	switch b := body.(type) {
	case *actors.CopyEntry:
		data, err := proto.Marshal(b.Entry)
		if err != nil {
			return err
		}
		c.Type, c.Body, c.CommandID, c.By = copyEntryType, data, b.CommandID, b.By
	case actors.ReadScopeConfig:
		c.Type = readConfigType
	case *actors.Append:
		// An aggregate that moved since the API took the request: the new
		// owner appends it as an append without a search (its sections are
		// decided without candidates; the next user message searches
		// again), rather than the client retrying.
		data, err := proto.Marshal(b.Request)
		if err != nil {
			return err
		}
		c.Type, c.Body = string(b.Request.ProtoReflect().Descriptor().FullName()), data
	case proto.Message:
		data, err := proto.Marshal(b)
		if err != nil {
			return err
		}
		c.Type, c.Body = string(b.ProtoReflect().Descriptor().FullName()), data
	default:
		return errMovedRetry
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		m, local, err := request(ctx, p.t, p.local.w, id, func(owner string) *nats.Msg {
			return &nats.Msg{Subject: callSubject(owner), Data: data}
		}, p.nc)
		switch {
		case local:
			err = p.local.dispatchKind(kind, id, who, body, reply)
		case err != nil:
			err = &api.Error{Code: 503, Message: "calling the node that serves " + id + ": " + err.Error()}
		default:
			reply(decodeCallReply(m))
			return
		}
		if err != nil {
			reply(nil, err)
		}
	}()
	return nil
}

func decodeCallReply(m *nats.Msg) (proto.Message, error) {
	if e := m.Header.Get(hdrError); e != "" {
		var ae api.Error
		if err := json.Unmarshal([]byte(e), &ae); err != nil {
			return nil, &api.Error{Code: 500, Message: "bad reply from another node: " + err.Error()}
		}
		return nil, &ae
	}
	msg, err := newMessage(m.Header.Get(hdrReplyType))
	if err == nil {
		err = proto.Unmarshal(m.Data, msg)
	}
	if err != nil {
		return nil, &api.Error{Code: 500, Message: "bad reply from another node: " + err.Error()}
	}
	return msg, nil
}

func newMessage(fullName string) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(fullName))
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

// callServer serves the remote calls of the other nodes on this node's
// actors.
type callServer struct {
	local   answerBy
	t       *placement.Table
	tenants *tenancy.Directory
	anyone  *tenancy.Caller
	nc      *nats.Conn
	logger  *slog.Logger
	// timeout bounds a call relayed to the aggregate's new owner; relays
	// counts those in flight (Shutdown waits for them).
	timeout time.Duration
	relays  *sync.WaitGroup
}

// Relaying a call: hdrCallHops counts the nodes it went on from, at most
// maxCallHops (placement changing under it); a call relayed again waits
// callHopPause per hop first (at most maxCallHopPause): the nodes' views of
// a partition handed over agree again within a tick or two.
const (
	hdrCallHops     = "Agentmem-Call-Hops"
	maxCallHops     = 8
	callHopPause    = 50 * time.Millisecond
	maxCallHopPause = 200 * time.Millisecond
)

func (s callServer) serve(m *nats.Msg) {
	if !strings.HasPrefix(m.Reply, "_INBOX.") {
		s.logger.Warn("remote call dropped: reply subject is not an inbox", "reply", m.Reply)
		return
	}
	var c remoteCall
	if err := json.Unmarshal(m.Data, &c); err != nil {
		s.answer(m, nil, &api.Error{Code: 400, Message: "bad remote call: " + err.Error()})
		return
	}
	if !s.t.Serves(c.ID) {
		// It moved (this node handed it over, or is stopping): the call
		// goes on to the new owner, as a forwarded request does.
		hops, _ := strconv.Atoi(m.Header.Get(hdrCallHops))
		if hops+1 >= maxCallHops || s.relays == nil {
			s.answer(m, nil, errMovedRetry)
			return
		}
		s.relays.Go(func() { s.relay(m, c.ID, hops+1) })
		return
	}
	var who *tenancy.Caller
	switch {
	case c.Node:
	case s.tenants == nil:
		who = s.anyone
	default:
		var ok bool
		if who, ok = s.tenants.ByPrincipal(c.Principal); !ok {
			s.answer(m, nil, &api.Error{Code: 403, Message: "principal " + c.Principal + " is not in this node's tenants file"})
			return
		}
	}
	var body any
	switch c.Type {
	case copyEntryType:
		e := &memoryv1.Entry{}
		if err := proto.Unmarshal(c.Body, e); err != nil {
			s.answer(m, nil, &api.Error{Code: 400, Message: "bad remote call: " + err.Error()})
			return
		}
		body = &actors.CopyEntry{CommandID: c.CommandID, Entry: e, By: c.By}
	case readConfigType:
		body = actors.ReadScopeConfig{}
	default:
		msg, err := newMessage(c.Type)
		if err == nil {
			err = proto.Unmarshal(c.Body, msg)
		}
		if err != nil {
			s.answer(m, nil, &api.Error{Code: 400, Message: "bad remote call: " + err.Error()})
			return
		}
		body = msg
	}
	reply := func(r proto.Message, err error) { s.answer(m, r, err) }
	if err := s.local.dispatchKind(c.Kind, c.ID, who, body, reply); err != nil {
		s.answer(m, nil, err)
	}
}

// relay sends the call m on aggregate id to its owner and passes the reply
// back as it came; when this node owns id again meanwhile it serves it.
func (s callServer) relay(m *nats.Msg, id string, hops int) {
	if hops > 1 {
		time.Sleep(min(time.Duration(hops-1)*callHopPause, maxCallHopPause))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	reply, local, err := request(ctx, s.t, s.local.w, id, func(owner string) *nats.Msg {
		return &nats.Msg{Subject: callSubject(owner), Data: m.Data, Header: nats.Header{hdrCallHops: {strconv.Itoa(hops)}}}
	}, s.nc)
	switch {
	case local:
		m.Header = nats.Header{hdrCallHops: {strconv.Itoa(hops)}}
		s.serve(m)
	case err != nil:
		s.answer(m, nil, &api.Error{Code: 503, Message: "relaying a call to the node that serves " + id + ": " + err.Error()})
	default:
		out := &nats.Msg{Subject: m.Reply, Header: reply.Header, Data: reply.Data}
		if perr := s.nc.PublishMsg(out); perr != nil && !errors.Is(perr, nats.ErrConnectionClosed) {
			s.logger.Warn("relaying a remote call's answer failed", "err", perr)
		}
	}
}

func (s callServer) answer(m *nats.Msg, r proto.Message, err error) {
	out := &nats.Msg{Subject: m.Reply, Header: nats.Header{}}
	if err == nil {
		out.Data, err = proto.Marshal(r)
		out.Header.Set(hdrReplyType, string(r.ProtoReflect().Descriptor().FullName()))
	}
	if err != nil {
		e, _ := json.Marshal(api.Classify(err))
		out.Header, out.Data = nats.Header{hdrError: {string(e)}}, nil
	}
	if perr := s.nc.PublishMsg(out); perr != nil && !errors.Is(perr, nats.ErrConnectionClosed) {
		s.logger.Warn("answering a remote call failed", "err", perr)
	}
}
