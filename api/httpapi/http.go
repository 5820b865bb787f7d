package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/dispatch"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// JSON as the service writes and reads it: proto field names, zero values
// included.
var (
	jsonOut = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}
	jsonIn  = protojson.UnmarshalOptions{}
)

// Service is what the HTTP API needs of the memory service: its
// dispatcher (dispatch.Dispatcher), as the NATS transport's.
type Service interface {
	// Do serves one JSON request as the operation of subject, for the
	// caller the adapter verified (nil: the single-user node's caller).
	Do(ctx context.Context, subject string, data []byte, who *tenancy.Caller) (dispatch.Reply, error)
	// Operations are the operations served.
	Operations() []api.Operation
	// Tenants is the tenants directory (nil: the single-user node).
	Tenants() *tenancy.Directory
	// Denied counts a request refused here (identity, origin).
	Denied(family string)
	// Stopping is closed when the service stops.
	Stopping() <-chan struct{}
	Version() string
}

var _ Service = (*dispatch.Dispatcher)(nil)

// Config configures the HTTP API.
type Config struct {
	// MaxBodyBytes bounds a request body (413 body beyond); the node sets
	// the NATS connection's max payload, so HTTP takes what NATS takes.
	MaxBodyBytes int64
	// Origins are the browser origins allowed besides the listener's own
	// (scheme://host:port). A request with any other Origin header is
	// refused (403 origin).
	Origins []string
	// Timeout bounds the wait for one reply (504 beyond; the operation may
	// still complete: retry with the same command id).
	Timeout time.Duration
}

// DefaultConfig returns the HTTP API defaults.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 1 << 20, Timeout: 90 * time.Second}
}

// Prefix is where the HTTP API is served: POST Prefix + the subject after
// mem.v1 with / for . (POST /v1/session/s1/append).
const Prefix = "/v1/"

// New returns the HTTP API of svc: POST /v1/<subject after mem.v1, / for
// .> with a JSON body answers exactly as a JSON request on that subject
// over NATS (same body, same reply, an error as an ErrorDetail with the
// code as HTTP status); GET /v1/<…>/watch streams the watch as Server-Sent
// Events; GET /v1/openapi.json is the OpenAPI 3.1 document of the
// operations served.
//
// Identity: without tenants (the single-user node) only loopback clients
// are served, and the Host must be a loopback name (no DNS rebinding);
// with tenants every request carries Authorization: Bearer <token>, a
// token of the tenants file, and is served as the principal it stands for,
// checked as that NATS identity would be.
func New(svc Service, cfg Config) http.Handler {
	d := DefaultConfig()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = d.MaxBodyBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	return &httpAPI{s: svc, cfg: cfg}
}

type httpAPI struct {
	s   Service
	cfg Config
	// doc is the OpenAPI document, built once.
	docOnce sync.Once
	doc     []byte
}

func (h *httpAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Every reply depends on the Origin (the CORS headers below), so a
	// cache must key it by the Origin too.
	w.Header().Add("Vary", "Origin")
	if err := h.checkOrigin(r); err != nil {
		writeHTTPError(w, err)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		// An allowed origin (checkOrigin refused the others) may read the
		// reply, errors included. No credentials: a browser sends its
		// bearer token itself, cookies are never read.
		w.Header().Set("Access-Control-Allow-Origin", origin)
	}
	rest, _ := strings.CutPrefix(r.URL.Path, Prefix)
	if r.Method == http.MethodOptions {
		h.preflight(w, rest)
		return
	}
	if rest == "openapi.json" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, "GET, HEAD, OPTIONS")
			return
		}
		w.Header().Set("Content-Type", api.ContentTypeJSON)
		h.docOnce.Do(func() { h.doc = buildOpenAPI(h.s.Operations(), h.s.Version()) })
		_, _ = w.Write(h.doc)
		return
	}
	who, herr := h.identify(r)
	if herr != nil {
		writeHTTPError(w, herr)
		return
	}
	subject, herr := subjectOf(rest)
	if herr != nil {
		writeHTTPError(w, herr)
		return
	}
	watch := strings.HasSuffix(subject, ".watch")
	switch {
	case r.Method == http.MethodGet && watch:
		h.serveSSE(w, r, subject, who)
	case r.Method == http.MethodPost:
		h.servePost(w, r, subject, who)
	case watch:
		methodNotAllowed(w, r, "GET, POST, OPTIONS")
	default:
		methodNotAllowed(w, r, "POST, OPTIONS")
	}
}

// corsAllowHeaders are the request headers a page may send: the bearer
// token, the body's type, and Last-Event-ID for a watch resumed by hand.
const corsAllowHeaders = "Authorization, Content-Type, Accept, Last-Event-ID"

// preflight answers OPTIONS: the methods of the path and the headers a
// page may send (a browser asks before a POST with Authorization or an
// application/json body). An allowed origin was checked before; a
// foreign one never gets here.
func (h *httpAPI) preflight(w http.ResponseWriter, rest string) {
	methods := "POST, OPTIONS"
	switch {
	case rest == "openapi.json":
		methods = "GET, HEAD, OPTIONS"
	case strings.HasSuffix(rest, "/watch"):
		methods = "GET, POST, OPTIONS"
	}
	w.Header().Set("Allow", methods)
	w.Header().Set("Access-Control-Allow-Methods", methods)
	w.Header().Set("Access-Control-Allow-Headers", corsAllowHeaders)
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeHTTPError(w, &api.Error{Code: 405, Field: "method", Message: fmt.Sprintf("%s %s: allowed %s (operations are POST; GET for a watch as Server-Sent Events and for /v1/openapi.json)", r.Method, r.URL.Path, allow)})
}

// NotFound answers a path outside the API and the node's other pages
// with the API's JSON error (404 path), so a client that reads errors as
// JSON reads this one too.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		writeHTTPError(w, &api.Error{Code: 404, Field: "path", Message: fmt.Sprintf("%q: no such page; the API is under %s (%sopenapi.json lists it)", r.URL.Path, Prefix, Prefix)})
	})
}

// subjectOf maps the path after /v1/ to the operation's subject. Every
// segment must be a subject token: no dots, wildcards or spaces.
func subjectOf(rest string) (string, *api.Error) {
	segs := strings.Split(rest, "/")
	for _, seg := range segs {
		if seg == "" || strings.ContainsAny(seg, ".*> \t\r\n") {
			return "", &api.Error{Code: 400, Field: "path", Message: fmt.Sprintf("%q: each path segment is an id or an operation of [A-Za-z0-9_-] (ids are 1..128 of them); /v1/<kind>/<id>/<op>", Prefix+rest)}
		}
	}
	return "mem.v1." + strings.Join(segs, "."), nil
}

func (h *httpAPI) servePost(w http.ResponseWriter, r *http.Request, subject string, who *tenancy.Caller) {
	// The body is JSON whatever its label says, as long as the label is
	// one a client sends for JSON: application/json (or a +json type), none
	// at all, text/plain (what fetch sends for a string body) or a form
	// (curl -d's default). A browser's cross-site post of those is refused
	// by its Origin before this. Any other format is refused (415).
	if ct := r.Header.Get("Content-Type"); !jsonLabel(ct) {
		writeHTTPError(w, &api.Error{Code: 415, Field: "content-type", Message: fmt.Sprintf("%q: bodies are JSON (application/json; text/plain or no Content-Type are read as JSON too)", ct)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeHTTPError(w, &api.Error{Code: 413, Field: "body", Message: fmt.Sprintf("larger than %d bytes, the most a request may carry", h.cfg.MaxBodyBytes)})
			return
		}
		writeHTTPError(w, &api.Error{Code: 400, Field: "body", Message: "reading the body: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	rep, err := h.s.Do(ctx, subject, body, who)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		writeHTTPError(w, &api.Error{Code: 504, Message: fmt.Sprintf("no reply within %s; the operation may still complete: retry with the same command_id", h.cfg.Timeout)})
		return
	}
	writeReply(w, rep)
}

// jsonLabel reports whether a request's Content-Type is one its body is
// read as JSON under.
func jsonLabel(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "", mt == api.ContentTypeJSON, mt == "text/plain", mt == "application/x-www-form-urlencoded":
		return true
	case strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"):
		return true
	}
	return false
}

// writeReply writes a reply of Do: its code as the status (200 without
// one), its JSON body.
func writeReply(w http.ResponseWriter, rep dispatch.Reply) {
	w.Header().Set("Content-Type", api.ContentTypeJSON)
	if c := rep.Code(); c != 0 {
		w.WriteHeader(httpStatus(c))
	}
	_, _ = w.Write(rep.Data)
}

// httpStatus is the HTTP status of an error code (they are HTTP codes; an
// unknown one is a 500).
func httpStatus(code int) int {
	if code < 400 || code > 599 {
		return http.StatusInternalServerError
	}
	return code
}

// errorJSON is the ErrorDetail of e as the service writes it in JSON.
func errorJSON(e *api.Error) []byte {
	b, _ := jsonOut.Marshal(&memoryv1.ErrorDetail{Code: uint32(e.Code), Field: e.Field, Message: e.Message})
	return b
}

func writeHTTPError(w http.ResponseWriter, e *api.Error) {
	if e.Code == 401 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem"`)
	}
	w.Header().Set("Content-Type", api.ContentTypeJSON)
	w.WriteHeader(httpStatus(e.Code))
	_, _ = w.Write(errorJSON(e))
}

// identify returns the caller of an HTTP request: nil (the single-user
// node's caller) for a loopback client of a node without tenants, else the
// principal of its bearer token, refused as the NATS identity the token
// stands for would be.
func (h *httpAPI) identify(r *http.Request) (*tenancy.Caller, *api.Error) {
	if h.s.Tenants() == nil {
		if !loopbackAddr(r.RemoteAddr) {
			h.s.Denied("identity")
			return nil, &api.Error{Code: 403, Field: "identity", Message: "the single-user node serves HTTP to loopback clients only; run with --tenants and http_tokens to serve others"}
		}
		if !loopbackHost(r.Host) {
			h.s.Denied("identity")
			return nil, &api.Error{Code: 403, Field: "host", Message: fmt.Sprintf("%q: the single-user node answers requests for localhost, 127.0.0.1 or [::1] only", r.Host)}
		}
		return nil, nil
	}
	token, ok := bearer(r.Header.Values("Authorization"))
	if !ok {
		h.s.Denied("identity")
		return nil, &api.Error{Code: 401, Field: "authorization", Message: "want one header Authorization: Bearer <token> (a token of the tenants file's http_tokens)"}
	}
	who, known, err := h.s.Tenants().TokenCaller(token)
	switch {
	case !known:
		h.s.Denied("identity")
		return nil, &api.Error{Code: 401, Field: "authorization", Message: "unknown bearer token"}
	case err != nil:
		h.s.Denied("identity")
		return nil, api.Classify(err)
	}
	return who, nil
}

func bearer(vals []string) (string, bool) {
	if len(vals) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// checkOrigin refuses a browser request from another origin (a page must
// not drive the API with the user's network position or token): an Origin
// header must be the listener's own scheme://host or one of cfg.Origins.
func (h *httpAPI) checkOrigin(r *http.Request) *api.Error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if slices.Contains(h.cfg.Origins, origin) {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host && u.Path == "" {
		return nil
	}
	h.s.Denied("origin")
	return &api.Error{Code: 403, Field: "origin", Message: fmt.Sprintf("%q is not this listener's origin nor an allowed one (--http-origins)", origin)}
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
