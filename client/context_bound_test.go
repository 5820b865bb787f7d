package client

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// bigContext is a context reply of about size encoded bytes.
func bigContext(session string, size int) *memoryv1.ContextReply {
	return &memoryv1.ContextReply{SessionId: session, Version: 1, Seq: 1,
		Messages: []*memoryv1.ContextMessage{{Id: session, Content: strings.Repeat("x", size)}}}
}

// TestContextCacheBytesBound: the contexts a client keeps stay within
// ContextCacheBytes whatever their count; the least recently used go
// first, and one larger than the bound is not kept. Before the bound, 64
// contexts of a megabyte each were all kept (64 MB).
func TestContextCacheBytesBound(t *testing.T) {
	cc := &contextCache{}
	const each = 1 << 20
	for i := range ContextCacheSize {
		cc.put(contextKey{session: fmt.Sprint("s", i)}, bigContext(fmt.Sprint("s", i), each))
		held := 0
		for _, h := range cc.held {
			held += proto.Size(h.reply)
		}
		if held > ContextCacheBytes || held != cc.bytes {
			t.Fatalf("after %d puts: %d bytes held (counted %d), bound %d", i+1, held, cc.bytes, ContextCacheBytes)
		}
	}
	if n := len(cc.held); n >= ContextCacheSize || n < ContextCacheBytes/each-1 {
		t.Fatalf("%d contexts held of %d put, want the %d most recent", n, ContextCacheSize, ContextCacheBytes/each-1)
	}
	last := fmt.Sprint("s", ContextCacheSize-1)
	if cc.get(contextKey{session: last}) == nil || cc.get(contextKey{session: "s0"}) != nil {
		t.Fatal("want the most recent held and the oldest gone")
	}
	cc.put(contextKey{session: "huge"}, bigContext("huge", ContextCacheBytes+1))
	if cc.get(contextKey{session: "huge"}) != nil || cc.get(contextKey{session: last}) == nil {
		t.Fatal("a context over the bound was kept, or it pushed the others out")
	}
	cc.drop(contextKey{session: last})
	if cc.get(contextKey{session: last}) != nil || cc.bytes > ContextCacheBytes-each {
		t.Fatalf("drop: %d bytes counted", cc.bytes)
	}
}

// TestWithoutContextCache: a copy made WithoutContextCache keeps nothing
// and leaves the original's cache alone.
func TestWithoutContextCache(t *testing.T) {
	c := New(nil)
	nc := c.WithoutContextCache()
	if nc.contexts != nil || c.contexts == nil {
		t.Fatal("WithoutContextCache: the copy still caches, or the original lost its cache")
	}
}
