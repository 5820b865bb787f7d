package inspector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// csrfCookie and csrfField carry the per-viewer token of the admin
// actions' forms.
const (
	csrfCookie = "agentmem_ui_csrf"
	csrfField  = "csrf"
)

// csrfToken is v's token: an HMAC of the viewer's name under a key drawn
// when the inspector starts, so it is the same on every page of one
// viewer, differs between viewers, and no other site can compute it. A
// form sends it in a hidden field; the cookie (SameSite=Strict,
// HttpOnly) sends it again, and the server checks both against the
// viewer's own.
func (in *Inspector) csrfToken(v *viewer) string {
	m := hmac.New(sha256.New, in.csrfKey[:])
	m.Write([]byte("csrf\x00" + v.name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// setCSRFCookie sends v's token as a cookie only this site's own
// navigation carries (SameSite=Strict).
func (in *Inspector) setCSRFCookie(w http.ResponseWriter, v *viewer) {
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: in.csrfToken(v), Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// csrfOK reports whether a POST carries v's token in its form and in its
// cookie.
func (in *Inspector) csrfOK(r *http.Request, v *viewer) bool {
	want := []byte(in.csrfToken(v))
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), want) && hmac.Equal([]byte(c.Value), want)
}
