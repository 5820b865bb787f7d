package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// MaxWatchReplyBytes bounds a watch reply (the NATS max payload is 1 MiB by
// default): a page ends before the change that would pass it, except the
// first, which is always sent (a stored batch fits the payload limit).
const MaxWatchReplyBytes = 512 << 10

// WatchPage cuts changes to the reply limit and, with decode, decompresses
// the entry values of the changes it keeps: a change alone over the limit
// decoded is sent as stored. It returns the page and the sequence to poll
// from next (last when nothing was cut).
func WatchPage(changes []*memoryv1.WatchChange, last uint64, decode bool) ([]*memoryv1.WatchChange, uint64, error) {
	size := 0
	for i, ch := range changes {
		out := ch
		if decode {
			d, err := decodeChange(ch)
			if err != nil {
				return nil, 0, err
			}
			out = d
		}
		n := proto.Size(out)
		if i == 0 && out != ch && n > MaxWatchReplyBytes {
			out, n = ch, proto.Size(ch) // alone over the limit decoded: as stored
		}
		if i > 0 && size+n > MaxWatchReplyBytes {
			return changes[:i], changes[i-1].GetSeq(), nil
		}
		size += n
		changes[i] = out
	}
	return changes, last, nil
}

var entryChangedName = (*memoryv1.EntryChanged)(nil).ProtoReflect().Descriptor().FullName()

// decodeChange returns ch with the entry values of its EntryChanged events
// decompressed (ch itself when it has none compressed).
func decodeChange(ch *memoryv1.WatchChange) (*memoryv1.WatchChange, error) {
	var out *memoryv1.WatchChange
	for i, a := range ch.GetBatch().GetEvents() {
		if a.MessageName() != entryChangedName {
			continue
		}
		ev := new(memoryv1.EntryChanged)
		if err := a.UnmarshalTo(ev); err != nil {
			return nil, fmt.Errorf("watch: change %d event %d: %w", ch.GetSeq(), i, err)
		}
		e := ev.GetEntry()
		if !e.GetCompressed() {
			continue
		}
		// ev is this call's own copy: decode in place what sharedmem.Plain
		// would decode into a clone.
		v, err := sharedmem.DecodeValue(e)
		if err != nil {
			return nil, fmt.Errorf("watch: change %d event %d: %w", ch.GetSeq(), i, err)
		}
		e.Value, e.Compressed = v, false
		na, err := anypb.New(ev)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = proto.Clone(ch).(*memoryv1.WatchChange)
		}
		out.Batch.Events[i] = na
	}
	if out == nil {
		return ch, nil
	}
	return out, nil
}
