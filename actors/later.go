package actors

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Later, set on an Append, asks the session to store and answer the
// append without its context sections: the node searches for their
// candidates afterwards and sends them in an Assemble. The actor fills it
// before it replies: MessageID is the user message whose sections are to
// come ("" when none are: no user message, a session that does not
// assemble, a retried command), Key what the search is for.
//
// Until the Assemble lands (or AssemblyWait passes), the session holds
// every other request it receives and serves them in order after: a
// context read never shows the append without its sections, and the next
// command is decided after them, so the same requests give the same
// events.
type Later struct {
	MessageID string
	Key       segmented.CandidateKey
}

// Assemble carries the candidates of user message MessageID, searched for
// Key, after its append was stored with Later. Its reply is nil (or
// *NeedCandidates when the session's key is another: the node searches
// again). It is dropped when the message is no longer awaited.
type Assemble struct {
	MessageID  string
	Candidates *segmented.Candidates
	Key        segmented.CandidateKey
}

// awaiting is the user message a session holds its requests for.
type awaiting struct {
	id    string
	held  []*request
	timer *time.Timer
}

// laterExpired is the session's own message: the sections of message id
// did not come within AssemblyWait.
type laterExpired struct{ id string }

// hold keeps m for later when the session awaits sections; it reports
// whether it did.
func (a *sessionActor) hold(m *request) bool {
	if a.later.id == "" {
		return false
	}
	switch m.body.(type) {
	case *Assemble, *memoryv1.EraseAggregate:
		// What the session awaits, and an erase, which no wait delays
		// (the sections of an erased session are refused: not active).
		return false
	}
	a.later.held = append(a.later.held, m)
	return true
}

// await starts holding requests for the sections of message id (the
// requests held already stay held, first).
func (a *sessionActor) await(id string) {
	a.later.id = id
	if self := a.self; self != nil {
		d := a.dir
		a.later.timer = time.AfterFunc(d.cfg.AssemblyWait, func() { d.send(self, &laterExpired{id: id}) })
	}
}

// stopAwaiting ends the wait; the held requests are served by releaseHeld.
func (a *sessionActor) stopAwaiting() {
	if a.later.timer != nil {
		a.later.timer.Stop()
	}
	a.later.id, a.later.timer = "", nil
}

// releaseHeld serves the held requests in order, each as if it had just
// arrived, until one of them makes the session await again (an append
// with Later: the rest stay held, first). It runs at the top of Receive,
// never inside the serving of another request.
func (a *sessionActor) releaseHeld() {
	for a.later.id == "" && len(a.later.held) > 0 {
		m := a.later.held[0]
		a.later.held[0] = nil
		a.later.held = a.later.held[1:]
		a.serveRequest(m)
	}
	if len(a.later.held) == 0 {
		a.later.held = nil
	}
}

// failHeld answers every held request with err and forgets them: the
// actor is about to restart (a storage failure), and a restarted actor
// holds nothing.
func (a *sessionActor) failHeld(err error) {
	held := a.later.held
	a.stopAwaiting()
	a.later.held = nil
	for _, m := range held {
		m.reply(nil, err)
	}
}

// expired gives up on the sections of message id, if still awaited.
func (a *sessionActor) expired(id string) {
	if a.later.id == id {
		a.giveUp("did not come in time", "wait", a.dir.cfg.AssemblyWait)
	}
}

// giveUp ends the wait for the sections awaited (why: the reason, with
// attrs), logged and counted; the held requests are served without them.
func (a *sessionActor) giveUp(why string, attrs ...any) {
	a.dir.deps.Logger.Warn("context assembler: the sections of a user message "+why+"; serving the session's held requests without them",
		append([]any{"session", a.id, "message", a.later.id, "held", len(a.later.held)}, attrs...)...)
	a.dir.deps.Metrics.AssemblyAbandoned.Inc()
	a.stopAwaiting()
}

// appendLater stores p's append without its sections and fills p.Later.
func (a *sessionActor) appendLater(p *Append) (proto.Message, error) {
	var later string
	reply, err := a.appendDecided(p.Request, func() ([]proto.Message, error) {
		evs, id, err := a.st().DecideAppendLater(p.Request, a.env())
		later = id
		return evs, err
	})
	if err != nil {
		return nil, err
	}
	if reply.GetResult().GetDuplicate() || later == "" {
		return reply, nil
	}
	k, _ := a.st().CandidateKey()
	*p.Later = Later{MessageID: later, Key: k}
	a.await(later)
	return reply, nil
}

// assemble decides the sections p carries, when the session awaits them.
func (a *sessionActor) assemble(p *Assemble) (proto.Message, error) {
	if a.later.id != p.MessageID {
		return nil, nil // given up on, or superseded: a later message decides its own
	}
	if serves := a.dir.deps.Serves; serves != nil && !serves(a.id) {
		// Handed over meanwhile: the new owner serves the session, and a
		// leaving node's drain does not wait on the log for sections.
		a.giveUp("came after the session's partition was handed over")
		return nil, nil
	}
	k, wants := a.st().CandidateKey()
	if wants && k != p.Key {
		return nil, &NeedCandidates{Key: k}
	}
	a.stopAwaiting() // whatever comes of it: the held requests follow
	if !wants {
		return nil, nil
	}
	_, err := a.mutate("", func() ([]proto.Message, error) {
		return a.st().DecideAssemble(p.MessageID, p.Candidates, a.env())
	})
	if err != nil {
		a.dir.deps.Logger.Warn("context assembler: the sections decided after an append were not stored", "session", a.id, "message", p.MessageID, "err", err)
		return nil, err
	}
	return &memoryv1.MutationReply{}, nil
}
