package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxHTTPSessions is the default bound on open Streamable HTTP
// sessions of one server (each holds memory and, while a client listens,
// a stream).
const DefaultMaxHTTPSessions = 64

// HTTPOptions configure ServeHTTP.
type HTTPOptions struct {
	// SessionTimeout closes a session idle this long (0: never).
	SessionTimeout time.Duration
	// MaxSessions bounds the open sessions: an initialize beyond it is
	// answered 503 max_http_sessions (0: DefaultMaxHTTPSessions).
	MaxSessions int
	// AllowedOrigins are the browser origins ("https://app.example") that
	// may call the server besides its own; a request with another Origin is
	// answered 403. A request without Origin (not from a browser) passes.
	AllowedOrigins []string
	// AllowedHosts are Host header values the server answers to besides
	// loopback names and the address the request arrived on (a DNS name
	// the server is reached by); any other Host is answered 403 (DNS
	// rebinding).
	AllowedHosts []string
}

// guard wraps the MCP handler with the checks every request passes before
// the SDK sees it: its Host, its Origin, and, for a request that would
// open a session, the session bound.
type guard struct {
	next http.Handler
	srv  *mcp.Server
	opts HTTPOptions

	// mu serializes requests that open a session, so that the count of
	// open sessions and the new session agree (initialize is quick).
	mu sync.Mutex
}

func newGuard(next http.Handler, srv *mcp.Server, opts HTTPOptions) *guard {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxHTTPSessions
	}
	return &guard{next: next, srv: srv, opts: opts}
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := g.badHost(r); why != "" {
		http.Error(w, "Forbidden: Host: "+why, http.StatusForbidden)
		return
	}
	if why := g.badOrigin(r); why != "" {
		http.Error(w, "Forbidden: Origin: "+why, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		g.next.ServeHTTP(w, r)
		return
	}
	// A POST without a session id: an initialize that opens a session.
	g.mu.Lock()
	defer g.mu.Unlock()
	open := 0
	for range g.srv.Sessions() {
		open++
	}
	if open >= g.opts.MaxSessions {
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("max_http_sessions: %d MCP sessions are open, the most this server holds (--max-http-sessions); close one or retry later", open), http.StatusServiceUnavailable)
		return
	}
	g.next.ServeHTTP(w, r)
}

// badHost says why r's Host is not one the server answers to ("": it is).
func (g *guard) badHost(r *http.Request) string {
	host := r.Host
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	switch {
	case host == "":
		return "missing"
	case isLoopbackName(name), slices.Contains(g.opts.AllowedHosts, host), slices.Contains(g.opts.AllowedHosts, name):
		return ""
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la.String() == host {
		return ""
	}
	return fmt.Sprintf("%q is not this server's address, a loopback name or an allowed host (--allowed-hosts)", host)
}

func isLoopbackName(name string) bool {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// badOrigin says why r's Origin may not call the server ("": it may): a
// browser sends Origin on cross-origin requests (and on same-origin POSTs);
// it must be the server's own origin (same host and port as Host) or an
// allowed one. Sec-Fetch-Site is not trusted on its own: the Origin decides.
func (g *guard) badOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if slices.Contains(g.opts.AllowedOrigins, origin) {
		return ""
	}
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host {
		return ""
	}
	return fmt.Sprintf("%q is not this server's origin or an allowed origin (--allowed-origins)", origin)
}
