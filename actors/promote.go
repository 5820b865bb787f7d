package actors

import (
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Promote is the promote command as the API layer hands it over: the request
// and the messages it names, read from swap (the projection) beforehand, so
// the actor never waits on the projection inside Receive.
type Promote struct {
	Request  *memoryv1.PromoteRequest
	Messages []*memoryv1.Message
}

func (a *sessionActor) promote(p *Promote) (proto.Message, error) {
	if !a.st().Exists() {
		return nil, notFound()
	}
	var promoted uint32
	res, err := a.mutate(p.Request.GetCommandId(), func() ([]proto.Message, error) {
		evs, err := a.st().DecidePromote(p.Messages, a.env())
		promoted = promotedTokens(evs)
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	if res.Duplicate {
		// The original reply's count, from the batch it stored.
		if evs, err := a.storedEvents(res.GetSeq()); err == nil {
			promoted = promotedTokens(evs)
		} else {
			a.dir.deps.Logger.Warn("duplicate promote answered without its token count: cannot read the original batch",
				"session", a.id, "seq", res.GetSeq(), "err", err)
		}
	}
	return &memoryv1.PromoteReply{Result: res, PromotedTokens: promoted, Usage: a.st().Usage()}, nil
}
