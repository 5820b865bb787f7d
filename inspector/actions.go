package inspector

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// actPrefix is where the admin actions' forms post.
const actPrefix = "/ui/act/"

// maxActionBody bounds a posted form (an edited value included).
const maxActionBody = 1 << 20

// actionPage is the result of an admin action: what was done, the new
// version or the erasure receipt, and the way back.
type actionPage struct {
	Base
	Kind, ID, Key string
	Title, Done   string
	Entry         *memoryv1.Entry
	Value         string
	Receipt       *memoryv1.EraseReceipt
	// ErasedSession is the session a session erase removed ("" for the
	// actions on a scope's key).
	ErasedSession string
}

// actionFunc performs one admin action on scope sc once the request
// passed the checks of action.
type actionFunc func(ctx context.Context, r *http.Request, v *viewer, sc client.Scope, p *actionPage) error

// action serves a POST of an admin form: the CSRF token (form and
// cookie, the viewer's own) first, then the scope and key named, then
// the viewer's right to change the scope (the API's rule, which the API
// applies again on the viewer's connection), then f, whose result is a
// page of its own (never a redirect: it shows the new version or the
// receipt once).
func (in *Inspector) action(f actionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r)
		if !in.readForm(w, r, v) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
		defer cancel()
		p := actionPage{Base: base(v, ""), Kind: r.PostFormValue("kind"), ID: r.PostFormValue("id"), Key: r.PostFormValue("key")}
		p.Tab = "scopes"
		if p.Kind == "global" {
			p.ID = "global"
		}
		switch {
		case !slices.Contains(scopeKinds, p.Kind):
			in.fail(w, r, v, badInput{"kind", "want one of " + strings.Join(scopeKinds, ", ")})
			return
		case events.ValidateID("id", p.ID) != nil:
			in.fail(w, r, v, badInput{"id", events.ValidateID("id", p.ID).Error()})
			return
		case p.Key == "":
			in.fail(w, r, v, badInput{"key", "must not be empty"})
			return
		}
		if err := f(ctx, r, v, client.Scope{Kind: p.Kind, ID: p.ID}, &p); err != nil {
			in.fail(w, r, v, err)
			return
		}
		in.render(r.Context(), w, http.StatusOK, "action.html", p)
	}
}

// readForm reads a posted admin form, bounded, and checks its CSRF token
// (form and cookie, the viewer's own); it answers the error page and
// reports false when either fails.
func (in *Inspector) readForm(w http.ResponseWriter, r *http.Request, v *viewer) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
	if err := r.ParseForm(); err != nil {
		in.errorPage(w, v, http.StatusBadRequest, "Bad request: the form could not be read: "+err.Error())
		return false
	}
	if !in.csrfOK(r, v) {
		in.errorPage(w, v, http.StatusForbidden, "Forbidden: this form's CSRF token is missing or wrong (a form of another site, or of an inspector since restarted). Reload the page and submit it again.")
		return false
	}
	return true
}

// errMayNotWrite refuses an action on a scope the viewer may not change.
func errMayNotWrite(v *viewer, what, kind, id string) error {
	return &client.Error{Code: http.StatusForbidden, Field: "scope", Message: fmt.Sprintf("%s may not %s in %s:%s", v.name, what, kind, id)}
}

// settleAction takes (accept) or drops the value consolidation proposed
// for the key (mem.v1.scope.<kind>.<id>.settle).
func (in *Inspector) settleAction(ctx context.Context, r *http.Request, v *viewer, sc client.Scope, p *actionPage) error {
	if !v.mayWrite(sc.Kind, sc.ID) {
		return errMayNotWrite(v, "settle a conflict", sc.Kind, sc.ID)
	}
	var accept bool
	switch d := r.PostFormValue("decision"); d {
	case "accept":
		accept = true
	case "reject":
	default:
		return badInput{"decision", fmt.Sprintf("%q: want accept or reject", d)}
	}
	rep, err := v.c.Settle(ctx, sc, p.Key, accept)
	if err != nil {
		return err
	}
	p.Entry = rep.GetEntry()
	p.Value = valueText(p.Entry)
	p.Title = "Conflict settled"
	if accept {
		p.Done = fmt.Sprintf("The proposed value of %s was accepted: it is version %d now.", p.Key, p.Entry.GetVersion())
	} else {
		p.Done = fmt.Sprintf("The proposed value of %s was rejected: the key keeps version %d.", p.Key, p.Entry.GetVersion())
	}
	return nil
}

// editAction writes a new version of the key with the value of the form,
// compare-and-set on the version the form showed (a write since is a
// conflict, not overwritten), keeping the entry's type, tags, importance
// and metadata (its source session, which a session's erase follows).
func (in *Inspector) editAction(ctx context.Context, r *http.Request, v *viewer, sc client.Scope, p *actionPage) error {
	if !v.mayWrite(sc.Kind, sc.ID) {
		return errMayNotWrite(v, "edit entries", sc.Kind, sc.ID)
	}
	base, err := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	if err != nil || base < 1 {
		return badInput{"version", fmt.Sprintf("%q: the version the edit starts from, a whole number > 0", r.PostFormValue("version"))}
	}
	cur, err := v.c.GetEntry(ctx, sc, p.Key, 0)
	if err != nil {
		return err
	}
	value := strings.ReplaceAll(r.PostFormValue("value"), "\r\n", "\n")
	rep, err := v.c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: p.Key, Value: []byte(value), ContentType: cur.GetContentType(),
		MemoryType: cur.GetMemoryType(), ExpectedVersion: &base, Importance: cur.GetImportance(), Tags: cur.GetTags(),
		Metadata: cur.GetMetadata(), By: v.name + " (inspector)"})
	if err != nil {
		return err
	}
	p.Entry = rep.GetEntry()
	p.Value = valueText(p.Entry)
	p.Title = "Entry edited"
	p.Done = fmt.Sprintf("%s is version %d now (it was %d).", p.Key, p.Entry.GetVersion(), base)
	return nil
}

// eraseAction erases the key: every version, from the log, the
// snapshots and the read models; the receipt says what went.
func (in *Inspector) eraseAction(ctx context.Context, r *http.Request, v *viewer, sc client.Scope, p *actionPage) error {
	if !v.mayErase(sc.Kind, sc.ID) {
		return errMayNotWrite(v, "erase entries", sc.Kind, sc.ID)
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if len(reason) > 256 {
		return badInput{"reason", "longer than 256 bytes"}
	}
	rec, err := v.c.EraseEntry(ctx, sc, p.Key, reason)
	if err != nil {
		return err
	}
	p.Receipt = rec
	p.Title = "Entry erased"
	p.Done = fmt.Sprintf("%s was erased from %s:%s: every version, from the log and the read models.", p.Key, sc.Kind, sc.ID)
	return nil
}
