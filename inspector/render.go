package inspector

import (
	"bytes"
	"context"
	"net/http"
)

// withCode is a page's data answered with another status than 200 (a
// point of time travel outside the session: 404, with the page that says
// so).
type withCode struct {
	code int
	data any
}

// part serves a fragment of page file (a template it defines, named by f)
// that the page's script swaps in; its errors are fragments too.
func (in *Inspector) part(file string, f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
		defer cancel()
		v := viewerOf(r)
		name, data, err := f(ctx, r, v)
		code := http.StatusOK
		if err != nil {
			code = statusOf(err)
			if code >= 500 {
				in.deps.Logger.Warn("inspector: part failed", "path", r.URL.Path, "err", err)
			}
			name, data = "errorpart", errorPage{Code: code, Message: err.Error()}
		}
		if wc, ok := data.(withCode); ok {
			code, data = wc.code, wc.data
		}
		var buf bytes.Buffer
		if err := in.pages[file].ExecuteTemplate(&buf, name, data); err != nil {
			in.deps.Logger.Error("inspector: template", "part", name, "err", err)
			http.Error(w, "template error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_, _ = w.Write(buf.Bytes())
	}
}

// errorPage answers code with the inspector's error page: the message and
// the navigation, never a bare text.
func (in *Inspector) errorPage(w http.ResponseWriter, v *viewer, code int, msg string) {
	in.render(context.Background(), w, code, "error.html", errorPage{Base: base(v, ""), Code: code, Title: http.StatusText(code), Message: msg})
}

// notFound is the page of a path the inspector does not serve.
func (in *Inspector) notFound(w http.ResponseWriter, r *http.Request) {
	in.errorPage(w, viewerOf(r), http.StatusNotFound, "No inspector page at "+r.URL.Path+".")
}
