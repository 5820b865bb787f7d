package client

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ContextCacheSize is how many contexts (session and format) a client keeps
// to ask for with if_version; past it the least recently used goes.
const ContextCacheSize = 64

// ContextCacheBytes bounds the encoded size of the contexts a client keeps,
// together: past it the least recently used go, and a context larger than
// it is not kept. A context grows up to its session's budget (a 128k-token
// budget is about half a megabyte of text, and a few megabytes decoded), so
// 64 of them unbounded by size held hundreds of megabytes for sessions
// long erased or never read again; decoded, what is kept takes about three
// times this (about 12 MB).
const ContextCacheBytes = 4 << 20

// Context returns the messages to send to the LLM, in layer order.
func (c *Client) Context(ctx context.Context, id string) (*memoryv1.ContextReply, error) {
	return c.ContextAs(ctx, id, memoryv1.ContextFormat_CONTEXT_FORMAT_UNSPECIFIED)
}

// ContextAs is Context with the messages also rendered for a chat API
// (reply.Rendered): CONTEXT_FORMAT_OPENAI gives a Chat Completions messages
// array, CONTEXT_FORMAT_ANTHROPIC a Messages API system string and messages.
//
// The client keeps the last context of each session and format it got (the
// ContextCacheSize most recently used, shared by copies made with
// WithTimeout) and asks with if_version: a context that did not change is
// answered "not modified" in a few bytes and the kept reply is returned.
// The reply is shared with later calls: treat it as read-only.
func (c *Client) ContextAs(ctx context.Context, id string, format memoryv1.ContextFormat) (*memoryv1.ContextReply, error) {
	if c.contexts == nil {
		reply := &memoryv1.ContextReply{}
		return reply, c.call(ctx, subject(id, "context"), &memoryv1.ContextRequest{Format: format}, reply)
	}
	k := contextKey{id, format}
	held := c.contexts.get(k)
	req := &memoryv1.ContextRequest{Format: format, IfVersion: held.GetVersion()}
	reply := &memoryv1.ContextReply{}
	if err := c.call(ctx, subject(id, "context"), req, reply); err != nil {
		if Code(err) == 404 {
			c.contexts.drop(k)
		}
		return reply, err
	}
	if !reply.GetNotModified() {
		c.contexts.put(k, reply)
		return reply, nil
	}
	if reply.GetVersion() == held.GetVersion() && reply.GetSeq() == held.GetSeq() {
		return held, nil
	}
	// Same version, other sequence: not the context held (the session was
	// erased and made again). Ask for the whole context.
	c.contexts.drop(k)
	req.IfVersion, reply = 0, &memoryv1.ContextReply{}
	if err := c.call(ctx, subject(id, "context"), req, reply); err != nil {
		return reply, err
	}
	c.contexts.put(k, reply)
	return reply, nil
}

type contextKey struct {
	session string
	format  memoryv1.ContextFormat
}

// WithoutContextCache returns a copy of c that keeps no context: every
// Context call asks for the whole context. For a caller that reads a
// session's context once (a page, a report), where keeping it would only
// hold its memory after the caller is done.
func (c *Client) WithoutContextCache() *Client { cc := *c; cc.contexts = nil; return &cc }

// contextCache holds the latest full context reply per session and format,
// at most ContextCacheSize of them and ContextCacheBytes of their encoded
// size (maxBytes, for tests; 0: ContextCacheBytes).
type contextCache struct {
	mu       sync.Mutex // guards the fields below
	held     map[contextKey]*heldContext
	clock    uint64
	bytes    int // the encoded size of what held holds
	maxBytes int
}

type heldContext struct {
	reply *memoryv1.ContextReply
	used  uint64
	size  int
}

func (cc *contextCache) get(k contextKey) *memoryv1.ContextReply {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	h, ok := cc.held[k]
	if !ok {
		return nil
	}
	cc.clock++
	h.used = cc.clock
	return h.reply
}

func (cc *contextCache) put(k contextKey, reply *memoryv1.ContextReply) {
	size := proto.Size(reply)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.held == nil {
		cc.held = map[contextKey]*heldContext{}
	}
	cc.dropLocked(k)
	limit := cc.maxBytes
	if limit <= 0 {
		limit = ContextCacheBytes
	}
	if size > limit {
		return // asked for whole every time rather than held
	}
	for len(cc.held) > 0 && (len(cc.held) >= ContextCacheSize || cc.bytes+size > limit) {
		var oldest contextKey
		least := ^uint64(0)
		for hk, h := range cc.held {
			if h.used < least {
				oldest, least = hk, h.used
			}
		}
		cc.dropLocked(oldest)
	}
	cc.clock++
	cc.held[k] = &heldContext{reply: reply, used: cc.clock, size: size}
	cc.bytes += size
}

func (cc *contextCache) drop(k contextKey) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.dropLocked(k)
}

func (cc *contextCache) dropLocked(k contextKey) {
	if h, ok := cc.held[k]; ok {
		cc.bytes -= h.size
		delete(cc.held, k)
	}
}
