package tenancy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidConfig is returned (wrapped) by Load and Config.Validate when the
// tenants file is unusable; the message names the field.
var ErrInvalidConfig = errors.New("tenancy: invalid config")

// Role is what a principal may do with what it can reach.
type Role string

// Roles.
const (
	// RoleReader reads what it can reach.
	RoleReader Role = "reader"
	// RoleWriter reads and writes what it can reach.
	RoleWriter Role = "writer"
	// RoleAdmin reaches everything, and is the only role that writes app and
	// project scopes.
	RoleAdmin Role = "admin"
)

// Config is the tenants file (--tenants FILE, JSON).
type Config struct {
	// NodeAccount is the NATS account the node runs in. A request stamped
	// with it did not cross an import and is refused.
	NodeAccount string `json:"node_account"`
	// Limits are the per-caller bounds applied to every principal unless
	// the principal sets its own.
	Limits Limits `json:"limits"`
	// Principals are the callers, matched by account and user.
	Principals []Principal `json:"principals"`
	// HTTPTokens are the bearer tokens of the HTTP API: each
	// stands for one NATS identity (account, user) of a principal, and a
	// request carrying it is checked exactly as a NATS request of that
	// identity. Only the token's SHA-256 is stored.
	HTTPTokens []HTTPToken `json:"http_tokens,omitempty"`
}

// HTTPToken maps a bearer token to a NATS identity.
type HTTPToken struct {
	// SHA256 is the lowercase hex SHA-256 of the token
	// (printf %s "$TOKEN" | sha256sum).
	SHA256  string `json:"sha256"`
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
}

// Principal is one caller of the service.
type Principal struct {
	// Name is the principal's id ([A-Za-z0-9_-]{1,128}): the writer of its
	// commands, the owner of its data, the label of its metrics.
	Name string `json:"name"`
	// Account and User are the NATS identity (Nats-Request-Info acc and
	// user). An empty User matches every user of the account that no other
	// principal names.
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	Role    Role   `json:"role"`
	// Agent is the agent id this principal is (its private scope agent:<id>).
	Agent string `json:"agent,omitempty"`
	// AgentType is the kind of agent it is ("database-specialist"): it
	// reads, and as a writer writes, the scope agent_type:<type> every
	// principal of the type shares, and its sessions read that scope. The
	// type is given here, by the node's operator, so no request can claim
	// another type's knowledge.
	AgentType string `json:"agent_type,omitempty"`
	// Users are the user ids whose sessions and user scopes it reaches.
	Users []string `json:"users,omitempty"`
	// Scopes are its shared-scope memberships: "workflow:<id>",
	// "swarm:<id>", "debate:<id>", "app:<name>", "project:<id>".
	Scopes []string `json:"scopes,omitempty"`
	// Limits override the file's limits for this principal (zero fields
	// keep the file's value).
	Limits *Limits `json:"limits,omitempty"`
}

// Limits bound one caller. Zero means the default of DefaultLimits.
type Limits struct {
	// MaxConcurrentQueries: projection queries in flight at once, min_seq
	// waits included (429 max_concurrent_queries).
	MaxConcurrentQueries int `json:"max_concurrent_queries,omitempty"`
	// MaxWatches: watch polls in flight at once (429 max_watches).
	MaxWatches int `json:"max_watches,omitempty"`
	// MaxSessions: sessions whose agent is the caller's (413 max_sessions).
	MaxSessions int `json:"max_sessions,omitempty"`
	// MaxEntriesPerScope: live entries it wrote last in one scope (413
	// max_entries_per_scope). Per writer: on a shared scope, other
	// members' entries do not count.
	MaxEntriesPerScope int `json:"max_entries_per_scope,omitempty"`
	// MaxBytesPerScope: bytes of live values (as stored) it wrote last in
	// one scope, counted on every applied write (413 max_bytes_per_scope).
	MaxBytesPerScope int64 `json:"max_bytes_per_scope,omitempty"`
	// MaxDataBytes: bytes of large data (mem.v1.data.put) it holds, as
	// sent, until the data expires (413 max_data_bytes).
	MaxDataBytes int64 `json:"max_data_bytes,omitempty"`
}

// DefaultLimits are the per-caller limits when the file says nothing.
func DefaultLimits() Limits {
	return Limits{MaxConcurrentQueries: 32, MaxWatches: 16, MaxSessions: 10000,
		MaxEntriesPerScope: 100000, MaxBytesPerScope: 256 << 20, MaxDataBytes: 1 << 30}
}

// or returns l with its zero fields taken from d.
func (l Limits) or(d Limits) Limits {
	if l.MaxConcurrentQueries == 0 {
		l.MaxConcurrentQueries = d.MaxConcurrentQueries
	}
	if l.MaxWatches == 0 {
		l.MaxWatches = d.MaxWatches
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = d.MaxSessions
	}
	if l.MaxEntriesPerScope == 0 {
		l.MaxEntriesPerScope = d.MaxEntriesPerScope
	}
	if l.MaxBytesPerScope == 0 {
		l.MaxBytesPerScope = d.MaxBytesPerScope
	}
	if l.MaxDataBytes == 0 {
		l.MaxDataBytes = d.MaxDataBytes
	}
	return l
}

func (l Limits) validate(where string) error {
	if l.MaxConcurrentQueries < 0 || l.MaxWatches < 0 || l.MaxSessions < 0 || l.MaxEntriesPerScope < 0 || l.MaxBytesPerScope < 0 || l.MaxDataBytes < 0 {
		return fmt.Errorf("%w: %s: limits must be >= 0", ErrInvalidConfig, where)
	}
	return nil
}

var idRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

var memberKinds = []string{"workflow", "swarm", "debate", "app", "project"}

// Validate reports the first problem of the file, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	if c.NodeAccount == "" {
		return fmt.Errorf("%w: node_account: required (the account the node runs in)", ErrInvalidConfig)
	}
	if err := c.Limits.validate("limits"); err != nil {
		return err
	}
	names := map[string]bool{}
	idents := map[string]bool{}
	for i, p := range c.Principals {
		at := fmt.Sprintf("principals[%d]", i)
		switch {
		case !idRule.MatchString(p.Name):
			return fmt.Errorf("%w: %s.name: %q is not [A-Za-z0-9_-]{1,128}", ErrInvalidConfig, at, p.Name)
		case names[p.Name]:
			return fmt.Errorf("%w: %s.name: %q named twice", ErrInvalidConfig, at, p.Name)
		case p.Account == "":
			return fmt.Errorf("%w: %s.account: required", ErrInvalidConfig, at)
		case p.Account == c.NodeAccount:
			return fmt.Errorf("%w: %s.account: %q is the node's own account; tenants live in their own accounts (a user in the node's account could forge its identity)", ErrInvalidConfig, at, p.Account)
		case idents[p.Account+"\x00"+p.User]:
			return fmt.Errorf("%w: %s: account %q user %q named twice", ErrInvalidConfig, at, p.Account, p.User)
		case p.Role != RoleReader && p.Role != RoleWriter && p.Role != RoleAdmin:
			return fmt.Errorf("%w: %s.role: %q, want reader, writer or admin", ErrInvalidConfig, at, p.Role)
		case p.Agent != "" && !idRule.MatchString(p.Agent):
			return fmt.Errorf("%w: %s.agent: %q is not [A-Za-z0-9_-]{1,128}", ErrInvalidConfig, at, p.Agent)
		case p.AgentType != "" && !idRule.MatchString(p.AgentType):
			return fmt.Errorf("%w: %s.agent_type: %q is not [A-Za-z0-9_-]{1,128}", ErrInvalidConfig, at, p.AgentType)
		}
		for j, u := range p.Users {
			if !idRule.MatchString(u) {
				return fmt.Errorf("%w: %s.users[%d]: %q is not [A-Za-z0-9_-]{1,128}", ErrInvalidConfig, at, j, u)
			}
		}
		for j, s := range p.Scopes {
			kind, id, ok := strings.Cut(s, ":")
			if !ok || !slices.Contains(memberKinds, kind) || !idRule.MatchString(id) {
				return fmt.Errorf("%w: %s.scopes[%d]: %q, want <workflow|swarm|debate|app|project>:<id>", ErrInvalidConfig, at, j, s)
			}
		}
		if p.Limits != nil {
			if err := p.Limits.validate(at + ".limits"); err != nil {
				return err
			}
		}
		names[p.Name] = true
		idents[p.Account+"\x00"+p.User] = true
	}
	return c.validateTokens(idents)
}

// validateTokens checks each HTTP token is a SHA-256, named once, for an
// identity some principal is (its account and user, or its account when
// the principal names no user).
func (c *Config) validateTokens(idents map[string]bool) error {
	seen := map[string]bool{}
	for i, t := range c.HTTPTokens {
		at := fmt.Sprintf("http_tokens[%d]", i)
		switch {
		case !sha256Rule.MatchString(t.SHA256):
			return fmt.Errorf("%w: %s.sha256: want 64 lowercase hex digits (the token's SHA-256), got %d characters", ErrInvalidConfig, at, len(t.SHA256))
		case seen[t.SHA256]:
			return fmt.Errorf("%w: %s.sha256: the same token listed twice", ErrInvalidConfig, at)
		case t.Account == c.NodeAccount:
			return fmt.Errorf("%w: %s.account: %q is the node's own account", ErrInvalidConfig, at, t.Account)
		case !idents[t.Account+"\x00"+t.User] && !idents[t.Account+"\x00"]:
			return fmt.Errorf("%w: %s: account %q user %q is no principal's identity", ErrInvalidConfig, at, t.Account, t.User)
		}
		seen[t.SHA256] = true
	}
	return nil
}

var sha256Rule = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Load reads and validates a tenants file. Unknown fields are errors (a
// typo in a permission must not silently grant or deny).
func Load(path string) (*Directory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, path, err)
	}
	return New(cfg)
}
