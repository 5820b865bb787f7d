package client

import (
	"context"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ContextCacheSize is how many contexts (session and format) a client keeps
// to ask for with if_version; past it the least recently used goes.
const ContextCacheSize = 64

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

// contextCache holds the latest full context reply per session and format,
// at most ContextCacheSize of them.
type contextCache struct {
	mu    sync.Mutex // guards the fields below
	held  map[contextKey]*heldContext
	clock uint64
}

type heldContext struct {
	reply *memoryv1.ContextReply
	used  uint64
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
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.held == nil {
		cc.held = map[contextKey]*heldContext{}
	}
	if _, ok := cc.held[k]; !ok && len(cc.held) >= ContextCacheSize {
		var oldest contextKey
		least := ^uint64(0)
		for hk, h := range cc.held {
			if h.used < least {
				oldest, least = hk, h.used
			}
		}
		delete(cc.held, oldest)
	}
	cc.clock++
	cc.held[k] = &heldContext{reply: reply, used: cc.clock}
}

func (cc *contextCache) drop(k contextKey) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.held, k)
}
