package inspector

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/tenancy"
)

// viewer is who looks at a page: a name for the header and the API client
// every read of the page goes through.
type viewer struct {
	name string
	c    *client.Client
	nc   *nats.Conn
	// caller is the viewer's principal as the API identifies it (nil: the
	// single-user node's unrestricted caller); the write checks of the
	// admin actions (mayWrite) are the API's own.
	caller *tenancy.Caller
}

// errAuth is a failed login (401): no credentials, or NATS refused them.
var errAuth = errors.New("inspector: the NATS server refused these credentials")

// errNotAdmin is a verified principal without the admin role (403).
type errNotAdmin struct{ who string }

func (e errNotAdmin) Error() string {
	return fmt.Sprintf("inspector: %s is not an admin; the inspector shows every session and scope, so it serves the admin role only", e.who)
}

// checkHostOrigin refuses a request whose Host is not one the inspector
// answers to (DNS rebinding) or whose Origin is another site's: "" passes.
func checkHostOrigin(r *http.Request, allowedHosts []string) string {
	host := r.Host
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	hostOK := false
	switch {
	case host == "":
		return "Host: missing"
	case isLoopbackName(name), slices.Contains(allowedHosts, host), slices.Contains(allowedHosts, name):
		hostOK = true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la.String() == host {
		hostOK = true
	}
	if !hostOK {
		return fmt.Sprintf("Host: %q is not this listener's address, a loopback name or an allowed host", host)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
			return fmt.Sprintf("Origin: %q is not the inspector's own origin", origin)
		}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "Sec-Fetch-Site: cross-site requests are refused"
	}
	return ""
}

func isLoopbackName(name string) bool {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// isLoopbackPeer reports whether the request came from a loopback address.
func isLoopbackPeer(r *http.Request) bool {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		h = r.RemoteAddr
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// logins are the tenant viewers' NATS connections, one per credential pair
// (by a hash of user and password: the password is never kept), reused
// while they are used and closed after maxIdle. At most maxLogins are
// open; the least recently used goes first.
type logins struct {
	url     string
	tenants *tenancy.Directory
	maxIdle time.Duration
	max     int
	now     func() time.Time

	mu     sync.Mutex // guards byKey, closed
	byKey  map[[32]byte]*login
	closed bool
}

type login struct {
	v    *viewer
	nc   *nats.Conn
	used time.Time
}

func newLogins(url string, tenants *tenancy.Directory, maxIdle time.Duration, max int) *logins {
	return &logins{url: url, tenants: tenants, maxIdle: maxIdle, max: max, now: time.Now, byKey: map[[32]byte]*login{}}
}

// viewer returns the viewer of a tenant request: its basic credentials name
// a NATS user, verified by the NATS server (a connection with them), whose
// account and user map to a principal (tenancy.Directory.Identify, the
// check every API request passes), which must have the admin role.
func (l *logins) viewer(ctx context.Context, r *http.Request) (*viewer, error) {
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return nil, errAuth
	}
	key := sha256.Sum256([]byte(user + "\x00" + pass))
	l.mu.Lock()
	l.sweepLocked()
	if in, ok := l.byKey[key]; ok {
		in.used = l.now()
		l.mu.Unlock()
		return in.v, nil
	}
	l.mu.Unlock()
	nc, err := nats.Connect(l.url, nats.UserInfo(user, pass), nats.Name("agentmem-inspector "+user),
		nats.MaxReconnects(-1), nats.Timeout(3*time.Second))
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, errAuth
		}
		return nil, fmt.Errorf("inspector: connect to NATS as %s: %w", user, err)
	}
	who, err := l.identify(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if !who.Admin() {
		nc.Close()
		return nil, errNotAdmin{who: "principal " + who.Principal}
	}
	v := &viewer{name: who.Principal, c: viewerClient(nc), nc: nc, caller: who}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		nc.Close()
		return nil, errors.New("inspector: closed")
	}
	if in, ok := l.byKey[key]; ok { // another request logged in meanwhile
		nc.Close()
		return in.v, nil
	}
	l.evictLocked()
	l.byKey[key] = &login{v: v, nc: nc, used: l.now()}
	return v, nil
}

// identify asks the NATS server who the connection is ($SYS.REQ.USER.INFO
// answers with the verified account and user) and maps that identity to a
// principal exactly as the API maps a request's Nats-Request-Info.
func (l *logins) identify(ctx context.Context, nc *nats.Conn) (*tenancy.Caller, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, "$SYS.REQ.USER.INFO", nil)
	if err != nil {
		return nil, fmt.Errorf("inspector: ask the NATS server who this user is: %w", err)
	}
	var info struct {
		Data struct {
			User    string `json:"user"`
			Account string `json:"account"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &info); err != nil || info.Error != nil || info.Data.Account == "" {
		return nil, fmt.Errorf("inspector: unreadable user info from the NATS server: %s", m.Data)
	}
	stamp, _ := json.Marshal(map[string]string{"acc": info.Data.Account, "user": info.Data.User})
	return l.tenants.Identify(nats.Header{tenancy.RequestInfoHeader: {string(stamp)}})
}

// sweepLocked closes the logins unused for maxIdle.
func (l *logins) sweepLocked() {
	now := l.now()
	for k, in := range l.byKey {
		if now.Sub(in.used) > l.maxIdle {
			in.nc.Close()
			delete(l.byKey, k)
		}
	}
}

// evictLocked makes room for one more login: idle ones first, then the
// least recently used.
func (l *logins) evictLocked() {
	l.sweepLocked()
	for len(l.byKey) >= l.max {
		var oldest [32]byte
		var t time.Time
		for k, in := range l.byKey {
			if t.IsZero() || in.used.Before(t) {
				oldest, t = k, in.used
			}
		}
		l.byKey[oldest].nc.Close()
		delete(l.byKey, oldest)
	}
}

// close closes every login; later logins fail.
func (l *logins) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for k, in := range l.byKey {
		in.nc.Close()
		delete(l.byKey, k)
	}
}
