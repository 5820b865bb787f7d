package inspector

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sourceMessage answers /ui/s/<id>/m/<message id>, the link of an
// entry's source message (metadata source_session and message ids), with
// a redirect to the conversation page that shows it, at its anchor
// (#m<n>). Message ids are the client's, so the session's batches are
// read (after the API's get, as the conversation page does) to find its
// ordinal.
func (in *Inspector) sourceMessage(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
	defer cancel()
	id, err := sessionID(r)
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	mid := r.PathValue("mid")
	if mid == "" || len(mid) > 256 {
		in.fail(w, r, v, badInput{"message_id", "want 1..256 bytes"})
		return
	}
	_, refs, _, _, err := in.index(ctx, v, id)
	if err != nil {
		if !in.erased(ctx, w, r, v, err) {
			in.fail(w, r, v, err)
		}
		return
	}
	var n uint64
	if len(refs) > 0 {
		err = in.readBatches(ctx, v, id, 0, refs[len(refs)-1].Seq, func(ch *memoryv1.WatchChange) bool {
			for _, a := range ch.GetBatch().GetEvents() {
				if a.MessageName() != messagesAppendedName {
					continue
				}
				ev := &memoryv1.MessagesAppended{}
				if a.UnmarshalTo(ev) != nil {
					continue
				}
				for _, m := range ev.GetMessages() {
					if m.GetId() == mid {
						n = m.GetSeq()
						return false
					}
				}
			}
			return true
		})
	}
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	if n == 0 {
		in.fail(w, r, v, &client.Error{Code: http.StatusNotFound, Field: "message_id", Message: fmt.Sprintf("session %s holds no message %q (erased, or past the messages the inspector reads)", id, mid)})
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/ui/s/%s/conversation?n=%d#m%d", url.PathEscape(id), n, n), http.StatusSeeOther)
}
