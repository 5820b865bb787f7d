package projections

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Replies (Corpus.Replies): a question's words are often the words of an
// earlier turn that asked it ("what's your dog called?"), while the
// answer is the next turn ("Biscuit!"), which shares none of them. So
// after each of the best replyDepth hits that asks a question (a sentence
// ending with '?'), the search puts the reply: the next message of its
// session, if the other party said it. It takes the question's score, so
// the assembler ranks it right after the question (which it may drop as a
// bare question) whatever its words. A reply that is a hit further down
// moves up; one that is a hit already above stays where it is.

// replyDepth bounds the hits whose replies are added: the best ones, which
// a context of a few thousand tokens can show.
const replyDepth = 30

// replies returns hits with the reply of each question among the first
// replyDepth put after it, cut to limit.
func (r *ranker) replies(hits []*memoryv1.SearchHit, limit int) ([]*memoryv1.SearchHit, error) {
	type key struct {
		sid string
		seq uint64
	}
	at := make(map[key]int, len(hits)) // hit → its index in hits
	for i, h := range hits {
		if m := h.GetMessage(); m != nil {
			at[key{h.GetSessionId(), m.GetSeq()}] = i
		}
	}
	out := make([]*memoryv1.SearchHit, 0, len(hits))
	moved := map[key]bool{}
	for i, h := range hits {
		m := h.GetMessage()
		if m != nil && moved[key{h.GetSessionId(), m.GetSeq()}] {
			continue
		}
		out = append(out, h)
		if i >= replyDepth || m == nil || swap.QuestionShare(m.GetContent()) == 0 {
			continue
		}
		reply, err := r.reply(h.GetSessionId(), m)
		if err != nil {
			return nil, err
		}
		if reply == nil {
			continue
		}
		k := key{h.GetSessionId(), reply.GetSeq()}
		if j, ok := at[k]; ok && (j < i || moved[k]) {
			continue // a better hit already
		}
		moved[k] = true
		out = append(out, &memoryv1.SearchHit{SessionId: h.GetSessionId(), Message: reply, Score: h.GetScore(), Kind: HitMessage})
	}
	return out[:min(len(out), limit)], nil
}

// reply returns the message after m in session sid when it is a
// conversation message (user or assistant) with content of the other role
// than m's; nil otherwise.
func (r *ranker) reply(sid string, m *memoryv1.Message) (*memoryv1.Message, error) {
	p := prefix(sid)
	k, v := r.msgs.Cursor().Seek(swapMessageKey(sid, m.GetSeq()+1))
	if k == nil || !bytes.HasPrefix(k, p) {
		return nil, nil
	}
	next := new(memoryv1.Message)
	if err := proto.Unmarshal(v, next); err != nil {
		return nil, fmt.Errorf("projections: stored message of %s after %d: %w", sid, m.GetSeq(), err)
	}
	role := next.GetRole()
	if (role != memoryv1.Role_ROLE_USER && role != memoryv1.Role_ROLE_ASSISTANT) || role == m.GetRole() || next.GetContent() == "" {
		return nil, nil
	}
	return next, nil
}
