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
		promoted = 0
		for _, ev := range evs {
			if e, ok := ev.(*memoryv1.MessagesPromoted); ok {
				for _, m := range e.GetMessages() {
					promoted += m.GetTokens()
				}
			}
		}
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.PromoteReply{Result: res, PromotedTokens: promoted, Usage: a.st().Usage()}, nil
}
