package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// convPageSize is the messages on one page of the conversation.
const convPageSize = 100

// longText is the length (runes) past which a message shows its start
// and fetches the rest on demand: a page of pasted logs stays small.
const (
	longText  = 4000
	shownText = 1500
)

type convPage struct {
	Base
	Info        *memoryv1.SessionInfo
	Status      string
	Msgs        []convMsg
	Page, Pages int
	Total       uint64 // messages in the session (the last ordinal)
	LastSeq     uint64
	Truncated   bool
}

// convMsg is one message of the transcript.
type convMsg struct {
	N        uint64 // the message's ordinal in the session
	ID, Role string
	Name     string
	Time     string
	Said     bool // Time is when it was said (imported), not appended
	Tokens   uint32
	Text     string
	Cut      int // the full text's length in runes when Text is its start
	Calls    []convCall
	ResultOf string // the tool call this message answers
	Data     *memoryv1.DataReference
	Batch    uint64 // the stream sequence of the batch that stored it
	Where    string
	WhereCls string
}

type convCall struct{ ID, Name, Args string }

// conversationPage is the session's transcript: every message as stored,
// with its role, tool calls and results, date, the batch that stored it
// (linked to the timeline) and where it is now (L1, summarized, archived,
// recalled), a page of convPageSize messages at a time (the last page by
// default; ?n= opens the page of message n).
func (in *Inspector) conversationPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	info, refs, trunc, six, err := in.index(ctx, v, id)
	if err != nil {
		return "", nil, err
	}
	p := convPage{Base: sessionBase(v, info), Info: info, Status: statusName(info.GetStatus()), Truncated: trunc}
	p.Tab = "conversation"
	var msgRefs []batchRef
	for _, ref := range refs {
		if ref.First > 0 {
			msgRefs = append(msgRefs, ref)
			p.Total = max(p.Total, ref.Last)
		}
	}
	if len(refs) > 0 {
		p.LastSeq = refs[len(refs)-1].Seq
	}
	p.Pages = max(1, int((p.Total+convPageSize-1)/convPageSize))
	p.Page = p.Pages
	q := r.URL.Query()
	if s := q.Get("n"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n < 1 || n > p.Total {
			return "", nil, badInput{"n", fmt.Sprintf("%q: this session has messages 1..%d", s, p.Total)}
		}
		p.Page = int((n-1)/convPageSize) + 1
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > p.Pages {
			return "", nil, badInput{"page", fmt.Sprintf("%q: want 1..%d", s, p.Pages)}
		}
		p.Page = n
	}
	lo, hi := uint64(p.Page-1)*convPageSize+1, uint64(p.Page)*convPageSize
	i := sort.Search(len(msgRefs), func(i int) bool { return msgRefs[i].Last >= lo })
	j := sort.Search(len(msgRefs), func(i int) bool { return msgRefs[i].First > hi })
	if i < j {
		err := in.readBatches(ctx, v, id, msgRefs[i].Seq-1, msgRefs[j-1].Seq, func(ch *memoryv1.WatchChange) bool {
			for _, a := range ch.GetBatch().GetEvents() {
				if a.MessageName() != messagesAppendedName {
					continue
				}
				ev := &memoryv1.MessagesAppended{}
				if a.UnmarshalTo(ev) != nil {
					continue
				}
				for _, m := range ev.GetMessages() {
					if m.GetSeq() >= lo && m.GetSeq() <= hi {
						p.Msgs = append(p.Msgs, convMessage(m, ch.GetSeq()))
					}
				}
			}
			return true
		})
		if err != nil {
			return "", nil, err
		}
	}
	six.mu.Lock()
	for k := range p.Msgs {
		p.Msgs[k].Where, p.Msgs[k].WhereCls = six.where.of(p.Msgs[k].N)
	}
	six.mu.Unlock()
	return "conversation.html", p, nil
}

func convMessage(m *memoryv1.Message, batch uint64) convMsg {
	c := convMsg{N: m.GetSeq(), ID: m.GetId(), Role: roleName(m.GetRole()), Name: m.GetName(), Tokens: m.GetTokens(),
		ResultOf: m.GetToolCallId(), Data: m.GetDataRef(), Batch: batch}
	t := m.GetSaidUnixNano()
	c.Said = t != 0
	if t == 0 {
		t = m.GetCreatedUnixNano()
	}
	if t != 0 {
		c.Time = time.Unix(0, t).UTC().Format("2006-01-02 15:04:05")
	}
	text := []rune(m.GetContent())
	if len(text) > longText {
		c.Text, c.Cut = string(text[:shownText]), len(text)
	} else {
		c.Text = m.GetContent()
	}
	for _, tc := range m.GetToolCalls() {
		args := tc.GetArguments()
		var v any
		if json.Unmarshal([]byte(args), &v) == nil {
			if b, err := json.MarshalIndent(v, "", "  "); err == nil {
				args = string(b)
			}
		}
		c.Calls = append(c.Calls, convCall{ID: tc.GetId(), Name: tc.GetName(), Args: args})
	}
	return c
}

// messageText answers message {n}'s whole text (text/plain): the rest of
// a long message, fetched when the reader asks for it.
func (in *Inspector) messageText(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
	defer cancel()
	fail := func(err error) { in.fail(w, r, v, err) }
	id, err := sessionID(r)
	if err != nil {
		fail(err)
		return
	}
	n, err := strconv.ParseUint(r.PathValue("n"), 10, 64)
	if err != nil || n == 0 {
		fail(badInput{"n", "want a message's ordinal (1, 2, …)"})
		return
	}
	_, refs, _, _, err := in.index(ctx, v, id)
	if err != nil {
		fail(err)
		return
	}
	var text *string
	for _, ref := range refs {
		if ref.First == 0 || n < ref.First || n > ref.Last {
			continue
		}
		err = in.readBatches(ctx, v, id, ref.Seq-1, ref.Seq, func(ch *memoryv1.WatchChange) bool {
			for _, a := range ch.GetBatch().GetEvents() {
				ev := &memoryv1.MessagesAppended{}
				if a.MessageName() != messagesAppendedName || a.UnmarshalTo(ev) != nil {
					continue
				}
				for _, m := range ev.GetMessages() {
					if m.GetSeq() == n {
						s := m.GetContent()
						text = &s
					}
				}
			}
			return false
		})
		break
	}
	if err != nil {
		fail(err)
		return
	}
	if text == nil {
		in.render(r.Context(), w, http.StatusNotFound, "error.html", errorPage{Base: base(v, id), Code: http.StatusNotFound,
			Message: fmt.Sprintf("session %s has no message %d in the log (erased, compacted away, or not yet written)", id, n)})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(*text))
}

// dataText answers a large tool result the session stored as large data
// (text/plain), read through the API's data endpoint with the viewer's
// rights: only when the reader opens it.
func (in *Inspector) dataText(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
	defer cancel()
	id, err := sessionID(r)
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	if _, err := v.c.Get(ctx, id); err != nil {
		in.fail(w, r, v, err)
		return
	}
	_, data, err := v.c.GetData(ctx, r.PathValue("ref"))
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}
