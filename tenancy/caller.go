package tenancy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
)

// RequestInfoHeader is the header nats-server stamps on a request that
// crossed a service import. It is read with the exact, case-sensitive key:
// the server replaces that key only, so a near-miss spelling is the
// client's own.
const RequestInfoHeader = "Nats-Request-Info"

// requestInfo is the part of the header's JSON the node uses.
type requestInfo struct {
	Account string `json:"acc"`
	User    string `json:"user"`
}

// Caller is the verified identity of one request and what it may do.
type Caller struct {
	// Principal is the principal's name ("" for the Unrestricted caller).
	Principal string
	Agent     string
	// AgentType is the principal's agent type (its tenants entry's
	// agent_type): the scope agent_type:<type> it shares with its kind.
	AgentType string
	Users     []string
	Scopes    []string
	Role      Role
	Limits    Limits
	// Unrestricted is the single-user node's caller: every check passes.
	Unrestricted bool
}

// Unrestricted is the caller of a node without a tenants file.
func Unrestricted(l Limits) *Caller { return &Caller{Unrestricted: true, Role: RoleAdmin, Limits: l} }

// Directory maps verified NATS identities to callers.
type Directory struct {
	cfg    Config
	tokens map[string]HTTPToken // by SHA-256 hex
	byUser map[string]*Caller   // account \x00 user
	byAcc  map[string]*Caller   // account (principals without a user)
	// identity is the NATS identity each caller is known by (the
	// principal's account and user), for a request this node verified
	// itself and forwards to another node.
	identity map[*Caller]requestInfo
}

// New builds a directory from a validated config.
func New(cfg Config) (*Directory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Directory{cfg: cfg, byUser: map[string]*Caller{}, byAcc: map[string]*Caller{}, tokens: map[string]HTTPToken{},
		identity: map[*Caller]requestInfo{}}
	for _, t := range cfg.HTTPTokens {
		d.tokens[t.SHA256] = t
	}
	base := cfg.Limits.or(DefaultLimits())
	for _, p := range cfg.Principals {
		l := base
		if p.Limits != nil {
			l = p.Limits.or(base)
		}
		c := &Caller{Principal: p.Name, Agent: p.Agent, AgentType: p.AgentType, Users: slices.Clone(p.Users),
			Scopes: slices.Clone(p.Scopes), Role: p.Role, Limits: l}
		if p.User == "" {
			d.byAcc[p.Account] = c
		} else {
			d.byUser[p.Account+"\x00"+p.User] = c
		}
		d.identity[c] = requestInfo{Account: p.Account, User: p.User}
	}
	return d, nil
}

// Principals is the number of principals (bounded: metrics may label by
// principal).
func (d *Directory) Principals() int { return len(d.cfg.Principals) }

// ByPrincipal returns the caller of principal name (false when there is
// none). Nodes of a cluster name the caller of a call they make to each
// other by its principal, identified by the node that received it.
func (d *Directory) ByPrincipal(name string) (*Caller, bool) {
	for _, m := range []map[string]*Caller{d.byUser, d.byAcc} {
		for _, c := range m {
			if c.Principal == name {
				return c, true
			}
		}
	}
	return nil, false
}

// Identify returns the caller of a request from its headers. The header must
// be present exactly once (the server stamps one value on every request that
// crossed an import) and name an account other than the node's; the
// (account, user) pair must be a principal. Every failure is a
// *DeniedError with code 403 that says which.
func (d *Directory) Identify(h nats.Header) (*Caller, error) {
	vals := h[RequestInfoHeader]
	if len(vals) != 1 {
		return nil, &DeniedError{Field: "identity", Reason: fmt.Sprintf(
			"no verified caller identity (%d %s headers; requests must come through a service import of the node's account)", len(vals), RequestInfoHeader)}
	}
	var ri requestInfo
	if err := json.Unmarshal([]byte(vals[0]), &ri); err != nil || ri.Account == "" {
		return nil, &DeniedError{Field: "identity", Reason: "unreadable " + RequestInfoHeader + " header"}
	}
	return d.identify(ri)
}

// identify maps a NATS identity to its principal's caller.
func (d *Directory) identify(ri requestInfo) (*Caller, error) {
	if ri.Account == d.cfg.NodeAccount {
		return nil, &DeniedError{Field: "identity", Reason: "requests from the node's own account are not served (tenants connect in their own accounts)"}
	}
	if c, ok := d.byUser[ri.Account+"\x00"+ri.User]; ok {
		return c, nil
	}
	if c, ok := d.byAcc[ri.Account]; ok {
		return c, nil
	}
	return nil, &DeniedError{Field: "identity", Reason: fmt.Sprintf("account %q user %q is not a principal of this node", ri.Account, ri.User)}
}

// TokenCaller returns the caller an HTTP bearer token stands for: the
// principal of the token's NATS identity, refused exactly as Identify
// refuses that identity stamped by the server. ok is false for a token the
// file does not have.
func (d *Directory) TokenCaller(token string) (c *Caller, ok bool, err error) {
	if token == "" {
		return nil, false, nil
	}
	sum := sha256.Sum256([]byte(token))
	t, found := d.tokens[hex.EncodeToString(sum[:])]
	if !found {
		return nil, false, nil
	}
	c, err = d.identify(requestInfo{Account: t.Account, User: t.User})
	return c, true, err
}

// ForwardInfo is the Nats-Request-Info value another node of the cluster
// identifies c by: the identity of c's principal. A node sets it on a
// request it verified itself (an HTTP request) when it forwards the request
// to the node that serves its aggregate, over the nodes' own subjects,
// which no client reaches; it is never read from a client. False for a
// caller that is no principal of this directory.
func (d *Directory) ForwardInfo(c *Caller) (string, bool) {
	ri, ok := d.identity[c]
	if !ok {
		return "", false
	}
	b, _ := json.Marshal(ri)
	return string(b), true
}

// DeniedError is a refusal: the caller may not do what it asked. Status
// makes it a 403 reply naming the field.
type DeniedError struct {
	Field  string
	Reason string
}

func (e *DeniedError) Error() string { return "forbidden: " + e.Field + ": " + e.Reason }

// Status is (403, field, reason).
func (e *DeniedError) Status() (int, string, string) { return 403, e.Field, e.Reason }

func (c *Caller) name() string {
	if c.Principal == "" {
		return "this caller"
	}
	return "principal " + c.Principal
}

func (c *Caller) admin() bool { return c.Unrestricted || c.Role == RoleAdmin }

// Admin reports whether every check passes for c (an admin, or the
// single-user node's caller).
func (c *Caller) Admin() bool { return c.admin() }

func (c *Caller) canWrite(field string) error {
	if c.Role == RoleReader && !c.Unrestricted {
		return &DeniedError{Field: field, Reason: c.name() + " is a reader"}
	}
	return nil
}

func (c *Caller) hasUser(u string) bool { return u != "" && slices.Contains(c.Users, u) }

// Session checks access to a session owned by userID and agentID (write:
// a mutation).
func (c *Caller) Session(sessionID, userID, agentID string, write bool) error {
	if c.admin() {
		return nil
	}
	if !c.hasUser(userID) && (agentID == "" || agentID != c.Agent) {
		return &DeniedError{Field: "session_id", Reason: fmt.Sprintf("%s may not reach session %s", c.name(), sessionID)}
	}
	if write {
		return c.canWrite("session_id")
	}
	return nil
}

// CreateSession checks that a session may be created for userID, agentID,
// project, app and agentType: the user must be one of the caller's, the
// agent and its type the caller's own (or empty), and the project and app
// (when given) scopes the caller is a member of. A session reads its user,
// project, app and agent type scopes (resolve, the context's memory
// section), so it may name only what its creator could read directly.
func (c *Caller) CreateSession(userID, agentID, project, app, agentType string) error {
	if c.admin() {
		return nil
	}
	if err := c.canWrite("session_id"); err != nil {
		return err
	}
	if userID != "" && !c.hasUser(userID) {
		return &DeniedError{Field: "user_id", Reason: fmt.Sprintf("%s may not act for user %q", c.name(), userID)}
	}
	if agentID != "" && agentID != c.Agent {
		return &DeniedError{Field: "agent_id", Reason: fmt.Sprintf("%s is not agent %q", c.name(), agentID)}
	}
	if agentType != "" && agentType != c.AgentType {
		return &DeniedError{Field: "agent_type", Reason: fmt.Sprintf("%s is not of agent type %q (a type comes from the tenants file, not from a request)", c.name(), agentType)}
	}
	if userID == "" && agentID == "" {
		return &DeniedError{Field: "user_id", Reason: "a session needs the caller's user_id or agent_id (nobody else could reach it)"}
	}
	for _, f := range []struct{ field, kind, id string }{{"project", "project", project}, {"app", "app", app}} {
		if f.id != "" && !slices.Contains(c.Scopes, f.kind+":"+f.id) {
			return &DeniedError{Field: f.field, Reason: fmt.Sprintf("%s is not a member of %s:%s (a session may name only a %s its creator belongs to)", c.name(), f.kind, f.id, f.field)}
		}
	}
	return nil
}

// Scope checks access to scope kind:id, other than session:<id> (which
// follows the session: see Session). write is a mutation.
func (c *Caller) Scope(kind, id string, write bool) error {
	if c.admin() {
		return nil
	}
	deny := func(why string) error {
		return &DeniedError{Field: "scope", Reason: fmt.Sprintf("%s %s %s:%s", c.name(), why, kind, id)}
	}
	var member bool
	switch kind {
	case "agent":
		member = c.Agent != "" && c.Agent == id
	case "user":
		member = c.hasUser(id)
	case "global":
		member = true
	case "agent_type":
		member = c.AgentType != "" && c.AgentType == id
	case "workflow", "swarm", "debate", "app", "project":
		member = slices.Contains(c.Scopes, kind+":"+id)
	default:
		return deny("may not reach")
	}
	switch {
	case !member:
		return deny("may not reach")
	case !write:
		return nil
	case kind == "app" || kind == "project":
		return deny("needs the admin role to write")
	}
	return c.canWrite("scope")
}

// Configure checks a change of scope kind:id's configuration (limits, TTLs,
// eviction): an admin's, except that an agent configures its own scope
// agent:<id>. A configuration applies to every member's entries (a lower
// max_entries evicts them), so membership, even as a writer, is not enough.
func (c *Caller) Configure(kind, id string) error {
	if c.admin() {
		return nil
	}
	if kind == "agent" && c.Agent != "" && c.Agent == id {
		return c.canWrite("scope")
	}
	return &DeniedError{Field: "scope", Reason: fmt.Sprintf("%s needs the admin role to configure %s:%s (only an agent configures its own scope)", c.name(), kind, id)}
}

// ListSessions checks a sessions.list filter: a non-admin lists by one of its
// users or by its own agent.
func (c *Caller) ListSessions(userID, agentID string) error {
	switch {
	case c.admin():
		return nil
	case userID != "" && !c.hasUser(userID):
		return &DeniedError{Field: "user_id", Reason: fmt.Sprintf("%s may not list user %q", c.name(), userID)}
	case agentID != "" && agentID != c.Agent:
		return &DeniedError{Field: "agent_id", Reason: fmt.Sprintf("%s may not list agent %q", c.name(), agentID)}
	case userID == "" && agentID == "":
		return &DeniedError{Field: "user_id", Reason: "give user_id or agent_id (one of the caller's)"}
	}
	return nil
}

// Data checks access to large data put by owner (a principal name).
func (c *Caller) Data(id, owner string) error {
	if c.admin() || (owner != "" && owner == c.Principal) {
		return nil
	}
	return &DeniedError{Field: "id", Reason: fmt.Sprintf("%s may not read data %s", c.name(), id)}
}

// Write checks a mutation that reaches nothing else (data put).
func (c *Caller) Write(field string) error { return c.canWrite(field) }
