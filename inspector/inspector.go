package inspector

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/tenancy"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the inspector is served.
const Prefix = "/ui/"

// Config bounds the inspector.
type Config struct {
	// AllowedHosts are Host values answered besides loopback names and the
	// listener's own address (a DNS name the node is reached by).
	AllowedHosts []string
	// PageSize is the number of sessions on one page of the list.
	PageSize int
	// MaxTimeline bounds the batches read for one timeline.
	MaxTimeline int
	// MaxLogins bounds the tenant viewers' open NATS connections;
	// LoginIdle closes one unused this long.
	MaxLogins int
	LoginIdle time.Duration
	// ReadTimeout bounds the API calls of one page.
	ReadTimeout time.Duration
	// MaxLive bounds the sessions followed live by all open pages at once
	// (the inspector's own budget, apart from the agents' max_watches).
	MaxLive int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{PageSize: 50, MaxTimeline: 20000, MaxLogins: 16, LoginIdle: 10 * time.Minute, ReadTimeout: 10 * time.Second, MaxLive: 64}
}

// Validate reports a bad configuration.
func (c Config) Validate() error {
	switch {
	case c.PageSize < 1 || c.PageSize > 1000:
		return fmt.Errorf("inspector: page_size %d: want 1..1000", c.PageSize)
	case c.MaxTimeline < 1:
		return fmt.Errorf("inspector: max_timeline %d: want > 0", c.MaxTimeline)
	case c.MaxLive < 1:
		return fmt.Errorf("inspector: max_live %d: want > 0", c.MaxLive)
	case c.MaxLogins < 1:
		return fmt.Errorf("inspector: max_logins %d: want > 0", c.MaxLogins)
	case c.LoginIdle <= 0 || c.ReadTimeout <= 0:
		return errors.New("inspector: login_idle and read_timeout must be > 0")
	}
	return nil
}

// Deps are what the inspector reads through.
type Deps struct {
	// Conn is the connection of the single-user node's viewer (the API's
	// unrestricted caller). Unused with Tenants.
	Conn *nats.Conn
	// Tenants, when set, makes a tenant node: viewers log in with their
	// NATS credentials (HTTP basic auth), connecting to NATSURL.
	Tenants *tenancy.Directory
	NATSURL string
	// Log is the event log time travel replays (actors.SessionAt).
	Log events.Log
	// Reader reads the whole log: its bounds (the time-travel window) and
	// its removal ledger (erasures). Stream is the log's stream name, as
	// `replay inspect` names it. Without a Reader, Log is used when it is
	// one; else the window is not checked and the ledger not shown.
	Reader events.StreamReader
	Stream string
	// Subjects names the scopes the log holds (the scopes directory);
	// without it, Reader or Log is used when it is one, else the directory
	// only opens a scope by its name.
	Subjects events.SubjectLister
	// Watcher, when set, serves the live updates from the log (the node's
	// watch) rather than the API's watch endpoint, whose slots the agents
	// need (max_watches).
	Watcher Watcher
	Logger  *slog.Logger
}

// Inspector is the /ui/ handler.
type Inspector struct {
	cfg   Config
	deps  Deps
	mux   *http.ServeMux
	pages map[string]*template.Template
	codec *events.Codec
	idx   *indexes
	// liveSlots bounds the sessions followed live (Config.MaxLive).
	liveSlots *slots
	local     *viewer // the single-user node's viewer (nil with tenants)
	logins    *logins // the tenant viewers (nil without tenants)
	ctx       context.Context
	cancel    context.CancelFunc
	// csrfKey keys the viewers' CSRF tokens (csrf.go); drawn at New.
	csrfKey [32]byte
}

var _ http.Handler = (*Inspector)(nil)

// New builds the inspector. Close it to end its live streams and close
// the tenant viewers' connections.
func New(cfg Config, deps Deps) (*Inspector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Log == nil {
		return nil, errors.New("inspector: deps.Log is required (time travel)")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if r, ok := deps.Log.(events.StreamReader); ok && deps.Reader == nil {
		deps.Reader = r
	}
	for _, l := range []any{deps.Reader, deps.Log} {
		if sl, ok := l.(events.SubjectLister); ok && deps.Subjects == nil {
			deps.Subjects = sl
		}
	}
	if deps.Stream == "" {
		deps.Stream = events.StreamName
	}
	in := &Inspector{cfg: cfg, deps: deps, codec: events.NewCodec(), idx: newIndexes(), liveSlots: &slots{size: cfg.MaxLive}}
	if _, err := rand.Read(in.csrfKey[:]); err != nil {
		return nil, fmt.Errorf("inspector: csrf key: %w", err)
	}
	switch {
	case deps.Tenants != nil:
		if deps.NATSURL == "" {
			return nil, errors.New("inspector: deps.NATSURL is required with tenants (viewers connect with their own credentials)")
		}
		in.logins = newLogins(deps.NATSURL, deps.Tenants, cfg.LoginIdle, cfg.MaxLogins)
	case deps.Conn != nil:
		in.local = &viewer{name: "local", c: viewerClient(deps.Conn), nc: deps.Conn}
	default:
		return nil, errors.New("inspector: deps.Conn is required without tenants")
	}
	var err error
	if in.pages, err = parsePages(); err != nil {
		return nil, err
	}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	in.routes()
	return in, nil
}

// Close ends the live streams and closes the tenant viewers' connections.
// It is idempotent.
func (in *Inspector) Close() {
	in.cancel()
	if in.logins != nil {
		in.logins.close()
	}
}

func (in *Inspector) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheFor(http.FileServerFS(static))))
	m.HandleFunc("GET /ui/{$}", in.page(in.sessionsPage))
	m.HandleFunc("/ui/", in.notFound)
	m.HandleFunc("GET /ui/s/{id}", in.page(in.contextPage))
	m.HandleFunc("GET /ui/s/{id}/timeline", in.page(in.timelinePage))
	m.HandleFunc("GET /ui/s/{id}/timeline/rows", in.part("timeline.html", in.rowsPart))
	m.HandleFunc("GET /ui/s/{id}/at", in.part("timeline.html", in.atPart))
	m.HandleFunc("GET /ui/s/{id}/conversation", in.page(in.conversationPage))
	m.HandleFunc("GET /ui/s/{id}/message/{n}", in.api(in.messageText))
	m.HandleFunc("GET /ui/s/{id}/data/{ref}", in.api(in.dataText))
	m.HandleFunc("GET /ui/s/{id}/search", in.page(in.searchPage))
	m.HandleFunc("GET /ui/s/{id}/compare", in.page(in.comparePage))
	m.HandleFunc("GET /ui/s/{id}/at.json", in.api(in.atJSON))
	m.HandleFunc("GET /ui/s/{id}/live", in.api(in.live))
	m.HandleFunc("GET /ui/live", in.api(in.live))
	m.HandleFunc("GET /ui/scopes", in.page(in.scopesPage))
	m.HandleFunc("GET /ui/s/{id}/m/{mid}", in.api(in.sourceMessage))
	m.HandleFunc("POST /ui/act/settle", in.action(in.settleAction))
	m.HandleFunc("POST /ui/act/edit", in.action(in.editAction))
	m.HandleFunc("POST /ui/act/erase", in.action(in.eraseAction))
	m.HandleFunc("GET /ui/s/{id}/erase", in.page(in.eraseSessionForm))
	m.HandleFunc("POST /ui/act/erase-session", in.eraseSessionAction)
	m.HandleFunc("GET /ui/erasures", in.page(in.erasuresPage))
	in.mux = m
}

func cacheFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP checks access, then serves the page.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser posts the
	// admin forms with "Origin: null", which checkHostOrigin refuses; no
	// referrer leaves for another site either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; style-src-attr 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'")
	if why := checkHostOrigin(r, in.cfg.AllowedHosts); why != "" {
		in.errorPage(w, nil, http.StatusForbidden, "Forbidden: "+why)
		return
	}
	post := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, actPrefix)
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !post {
		h.Set("Allow", "GET, HEAD")
		in.errorPage(w, nil, http.StatusMethodNotAllowed, "The inspector's pages are read with GET; only its admin forms ("+actPrefix+"…) are posted.")
		return
	}
	if r.URL.Query().Has("password") || r.URL.Query().Has("token") || r.URL.User != nil {
		in.errorPage(w, nil, http.StatusBadRequest, "Bad request: credentials never go in a URL; use HTTP basic auth.")
		return
	}
	v, err := in.viewer(r)
	if err != nil {
		in.refuse(w, err)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), viewerKey{}, v))
	if !post && !strings.HasPrefix(r.URL.Path, "/ui/static/") {
		in.setCSRFCookie(w, v)
	}
	in.mux.ServeHTTP(w, r)
}

type viewerKey struct{}

func viewerOf(r *http.Request) *viewer { return r.Context().Value(viewerKey{}).(*viewer) }

// errNotLoopback refuses a remote client of the single-user node.
var errNotLoopback = errors.New("inspector: the single-user node serves the inspector to loopback clients only (run with --tenants to serve admins elsewhere)")

// viewerClient is a viewer's API client. It keeps no context between
// pages: a page reads a session's context once, and the client's cache
// (the last context of each of 64 sessions) held them, some megabytes
// each, long after the page was served and the session erased.
func viewerClient(nc *nats.Conn) *client.Client { return client.New(nc).WithoutContextCache() }

func (in *Inspector) viewer(r *http.Request) (*viewer, error) {
	if in.logins == nil {
		if !isLoopbackPeer(r) {
			return nil, errNotLoopback
		}
		return in.local, nil
	}
	return in.logins.viewer(r.Context(), r)
}

func (in *Inspector) refuse(w http.ResponseWriter, err error) {
	var na errNotAdmin
	switch {
	case errors.Is(err, errAuth):
		w.Header().Set("WWW-Authenticate", `Basic realm="agentmem inspector", charset="UTF-8"`)
		in.errorPage(w, nil, http.StatusUnauthorized, "Unauthorized: log in with the NATS user and password of an admin principal.")
	case errors.As(err, &na), errors.Is(err, errNotLoopback):
		in.errorPage(w, nil, http.StatusForbidden, "Forbidden: "+err.Error())
	default:
		var d *tenancy.DeniedError
		if errors.As(err, &d) {
			in.errorPage(w, nil, http.StatusForbidden, "Forbidden: "+d.Error())
			return
		}
		in.deps.Logger.Warn("inspector: login failed", "err", err)
		in.errorPage(w, nil, http.StatusServiceUnavailable, "Service unavailable: "+err.Error())
	}
}

// pageFunc renders one page: it returns the template name and its data.
type pageFunc func(ctx context.Context, r *http.Request, v *viewer) (string, any, error)

func (in *Inspector) page(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
		defer cancel()
		v := viewerOf(r)
		name, data, err := f(ctx, r, v)
		if r.Context().Err() != nil {
			return // the client left: nothing to render, no failure to log
		}
		if err != nil {
			if in.erased(ctx, w, r, v, err) {
				return
			}
			in.fail(w, r, v, err)
			return
		}
		code := http.StatusOK
		if wc, ok := data.(withCode); ok {
			code, data = wc.code, wc.data
		}
		in.render(r.Context(), w, code, name, data)
	}
}

func (in *Inspector) api(f func(w http.ResponseWriter, r *http.Request, v *viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { f(w, r, viewerOf(r)) }
}

// erased renders, for a session page that is a 404, the erasure of the
// session the removal ledger records, if any (still a 404): when, who,
// why, how many messages; nothing of its content. It reports whether it
// did.
func (in *Inspector) erased(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer, err error) bool {
	id := r.PathValue("id")
	if statusOf(err) != http.StatusNotFound || id == "" || events.ValidateID("session_id", id) != nil {
		return false
	}
	p, lerr := in.erasedSession(ctx, id)
	if lerr != nil {
		if !errors.Is(lerr, errNoLedger) {
			in.deps.Logger.Warn("inspector: read the removal ledger", "err", lerr)
		}
		return false
	}
	if p == nil {
		return false
	}
	p.Base = base(v, "")
	in.render(r.Context(), w, http.StatusNotFound, "erased.html", p)
	return true
}

// fail renders an error page with the API's code (404, 403, 400…).
func (in *Inspector) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	code := statusOf(err)
	if code >= 500 {
		in.deps.Logger.Warn("inspector: page failed", "path", r.URL.Path, "err", err)
	}
	in.render(r.Context(), w, code, "error.html", errorPage{Base: base(v, r.PathValue("id")), Code: code, Title: http.StatusText(code), Message: err.Error()})
}

func statusOf(err error) int {
	var bad badInput
	var out *outsideWindow
	switch c := client.Code(err); {
	case errors.As(err, &out):
		return http.StatusNotFound
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case c >= 400 && c < 600:
		return c
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable
}

// badInput is a bad query parameter (400), naming it.
type badInput struct{ field, reason string }

func (b badInput) Error() string { return b.field + ": " + b.reason }

// render executes page name with data and sends it. The page is built in
// memory first (a template error is then a 500, not half a page) but not
// for a client that left: ctx is the request's, and once it ends the
// execution stops at its next write and nothing is sent. A timeline of
// thousands of batches takes megabytes and seconds to build; built to the
// end for nobody, it held them after the client went away.
func (in *Inspector) render(ctx context.Context, w http.ResponseWriter, code int, name string, data any) {
	if ctx.Err() != nil {
		return
	}
	var buf bytes.Buffer
	if err := in.pages[name].ExecuteTemplate(ctxWriter{ctx, &buf}, "layout", data); err != nil {
		if ctx.Err() != nil {
			return // the client left: no one to answer
		}
		in.deps.Logger.Error("inspector: template", "page", name, "err", err)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, "<!doctype html><html lang=en><title>Error 500</title><h1>Error 500</h1><p>The page could not be drawn: %s</p><p><a href=\"/ui/\">Back to the sessions</a></p></html>", template.HTMLEscapeString(err.Error()))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// ctxWriter fails every write once ctx is done, which stops a template's
// execution.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := n[len("templates/"):]
		if base == "layout.html" || base == "parts.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", n)
		if err != nil {
			return nil, fmt.Errorf("inspector: template %s: %w", base, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// Base is what every page's layout shows.
type Base struct {
	Viewer  string
	Session string // the session the page is about ("" for none)
	Tab     string
	// MayEraseSession offers the session's erase (sessionBase).
	MayEraseSession bool
}

func base(v *viewer, session string) Base {
	b := Base{Session: session}
	if v != nil {
		b.Viewer = v.name
	}
	return b
}

type errorPage struct {
	Base
	Code           int
	Title, Message string
}
