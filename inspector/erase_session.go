package inspector

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// mayEraseSession reports whether v may erase the session info describes:
// the API's rule for a session erase (a caller that may change the
// session: its user's or agent's principal as a writer, or an admin). The
// API checks again on the viewer's own connection: this decides what the
// pages offer and refuses early.
func (v *viewer) mayEraseSession(info *memoryv1.SessionInfo) bool {
	if v.caller == nil {
		return true // the single-user node's unrestricted caller
	}
	return v.caller.Session(info.GetSessionId(), info.GetUserId(), info.GetAgentId(), true) == nil
}

// sessionBase is the Base of a page about the session info describes,
// with the erase offered when v may erase it.
func sessionBase(v *viewer, info *memoryv1.SessionInfo) Base {
	b := base(v, info.GetSessionId())
	b.MayEraseSession = v.mayEraseSession(info)
	return b
}

// eraseSessionPage is the confirmation step of a session's erase: what
// goes, and the form (a reason, the session's id typed again).
type eraseSessionPage struct {
	Base
	Info   *memoryv1.SessionInfo
	Status string
	CSRF   string
	// MaxReason is the API's bound of an erase's reason.
	MaxReason int
}

// errMayNotEraseSession refuses the erase of a session the viewer may not
// change.
func errMayNotEraseSession(v *viewer, id string) error {
	return &client.Error{Code: http.StatusForbidden, Field: "session_id", Message: fmt.Sprintf("%s may not erase session %s (its user's or agent's principal as a writer, or an admin, may)", v.name, id)}
}

// eraseSessionForm serves GET /ui/s/{id}/erase: the confirmation step,
// to a viewer who may erase the session only.
func (in *Inspector) eraseSessionForm(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	info, err := v.c.Get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if !v.mayEraseSession(info) {
		return "", nil, errMayNotEraseSession(v, id)
	}
	p := eraseSessionPage{Base: sessionBase(v, info), Info: info, Status: statusName(info.GetStatus()), CSRF: in.csrfToken(v), MaxReason: api.MaxEraseReasonBytes}
	return "erasesession.html", p, nil
}

// eraseSessionAction serves POST /ui/act/erase-session: the CSRF token,
// the session (which the viewer must be able to read and change), the
// confirmation (the session's id typed again), then the API's session
// erase on the viewer's own connection, so the removal ledger names the
// viewer's principal as who asked it. The receipt is a page of its own;
// the session's pages say it was erased from then on.
func (in *Inspector) eraseSessionAction(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	if !in.readForm(w, r, v) {
		return
	}
	id := r.PostFormValue("session")
	if err := events.ValidateID("session", id); err != nil {
		in.fail(w, r, v, badInput{"session", err.Error()})
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if len(reason) > api.MaxEraseReasonBytes {
		in.fail(w, r, v, badInput{"reason", fmt.Sprintf("%d bytes, the limit is %d", len(reason), api.MaxEraseReasonBytes)})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), api.EraseTimeout)
	defer cancel()
	info, err := v.c.Get(ctx, id)
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	if !v.mayEraseSession(info) {
		in.fail(w, r, v, errMayNotEraseSession(v, id))
		return
	}
	if c := strings.TrimSpace(r.PostFormValue("confirm")); c != id {
		in.fail(w, r, v, badInput{"confirm", fmt.Sprintf("%q is not the session's id: type %s to confirm its erase", c, id)})
		return
	}
	rec, err := v.c.EraseSession(ctx, id, reason)
	if err != nil {
		in.fail(w, r, v, err)
		return
	}
	p := actionPage{Base: base(v, ""), Title: "Session erased", Receipt: rec, ErasedSession: id,
		Done: fmt.Sprintf("Session %s was erased: its events left the log, its session scope and what it published went with it, and no read model holds them.", id)}
	p.Tab = "sessions"
	in.render(r.Context(), w, http.StatusOK, "action.html", p)
}
