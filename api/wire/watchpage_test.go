package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// entryChange is change seq holding one EntryChanged of value v, stored
// compressed.
func entryChange(t *testing.T, seq uint64, v []byte) *memoryv1.WatchChange {
	t.Helper()
	stored, compressed := sharedmem.EncodeValue(v)
	if !compressed {
		t.Fatalf("value of %d bytes not compressed", len(v))
	}
	a, err := anypb.New(&memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "k", Value: stored, Compressed: true, Size: uint32(len(v))}})
	if err != nil {
		t.Fatal(err)
	}
	return &memoryv1.WatchChange{Seq: seq, Subject: "s", Batch: &memoryv1.EventBatch{Events: []*anypb.Any{a}}}
}

func entryOf(t *testing.T, ch *memoryv1.WatchChange) *memoryv1.Entry {
	t.Helper()
	ev := new(memoryv1.EntryChanged)
	if err := ch.GetBatch().GetEvents()[0].UnmarshalTo(ev); err != nil {
		t.Fatal(err)
	}
	return ev.GetEntry()
}

// TestWatchPageDecodes: with decode, the page's entries are decompressed
// (the changes given are left as they were); a first change over the limit
// decoded is sent as stored; a later one ends the page before it.
func TestWatchPageDecodes(t *testing.T) {
	small := bytes.Repeat([]byte("notes "), sharedmem.CompressThreshold)
	big := make([]byte, MaxWatchReplyBytes+1)
	t.Run("decoded", func(t *testing.T) {
		ch := entryChange(t, 1, small)
		before := proto.Clone(ch)
		page, last, err := WatchPage([]*memoryv1.WatchChange{ch}, 9, true)
		if err != nil || len(page) != 1 || last != 9 {
			t.Fatalf("page %d changes, last %d, err %v", len(page), last, err)
		}
		if e := entryOf(t, page[0]); e.GetCompressed() || !bytes.Equal(e.GetValue(), small) || e.GetSize() != uint32(len(small)) {
			t.Fatalf("entry compressed=%v value %d bytes size %d", e.GetCompressed(), len(e.GetValue()), e.GetSize())
		}
		if !proto.Equal(ch, before) {
			t.Fatal("the change given was changed")
		}
	})
	t.Run("first over the limit", func(t *testing.T) {
		ch := entryChange(t, 1, big)
		page, last, err := WatchPage([]*memoryv1.WatchChange{ch, entryChange(t, 2, small)}, 2, true)
		if err != nil || len(page) != 2 || last != 2 || page[0] != ch || !entryOf(t, page[0]).GetCompressed() || entryOf(t, page[1]).GetCompressed() {
			t.Fatalf("page %d changes, last %d, err %v: want the first as stored, the second decoded", len(page), last, err)
		}
	})
	t.Run("later over the limit", func(t *testing.T) {
		page, last, err := WatchPage([]*memoryv1.WatchChange{entryChange(t, 1, small), entryChange(t, 2, big)}, 2, true)
		if err != nil || len(page) != 1 || last != 1 || entryOf(t, page[0]).GetCompressed() {
			t.Fatalf("page %d changes, last %d, err %v: want the first decoded, then 1", len(page), last, err)
		}
	})
	t.Run("no decode", func(t *testing.T) {
		ch := entryChange(t, 1, big)
		page, last, err := WatchPage([]*memoryv1.WatchChange{ch}, 1, false)
		if err != nil || len(page) != 1 || last != 1 || page[0] != ch {
			t.Fatalf("page %d changes, last %d, err %v", len(page), last, err)
		}
	})
}
