package mcpserver

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/envflag"
)

// Config is one MCP server: the NATS connection it acts as, the agent whose
// memory "agent" means, and where it listens.
type Config struct {
	// NATSURL is the node's NATS.
	NATSURL string
	// NATSUser and NATSPassword, or NATSCreds (a JWT credentials file), are
	// the identity of every tool call: with tenants, the agent's NATS user.
	NATSUser     string
	NATSPassword string
	NATSCreds    string
	// Agent is the agent id of the scope "agent" and of sessions
	// session_append creates (with examples/auth: a1 for user agent-a1).
	Agent string
	// HTTPAddr is host:port for Streamable HTTP; empty serves stdio.
	HTTPAddr string
	// Timeout bounds one service call.
	Timeout time.Duration
	// SessionTimeout closes an HTTP MCP session idle this long.
	SessionTimeout time.Duration
	// MaxHTTPSessions bounds the open HTTP MCP sessions (503
	// max_http_sessions beyond it).
	MaxHTTPSessions int
	// AllowedOrigins and AllowedHosts widen the HTTP Origin and Host checks
	// (HTTPOptions).
	AllowedOrigins []string
	AllowedHosts   []string
}

// DefaultConfig is a local single-user node on the default port, over stdio.
func DefaultConfig() Config {
	return Config{NATSURL: nats.DefaultURL, Timeout: 10 * time.Second, SessionTimeout: 30 * time.Minute, MaxHTTPSessions: DefaultMaxHTTPSessions}
}

// ErrConfig is returned (wrapped) by Validate for a config that cannot work.
var ErrConfig = errors.New("mcpserver: bad config")

// Validate checks cfg.
func (c Config) Validate() error {
	switch {
	case c.NATSURL == "":
		return fmt.Errorf("%w: nats-url is empty", ErrConfig)
	case c.NATSCreds != "" && c.NATSUser != "":
		return fmt.Errorf("%w: give nats-creds or nats-user, not both", ErrConfig)
	case c.NATSPassword != "" && c.NATSUser == "":
		return fmt.Errorf("%w: nats-password without nats-user", ErrConfig)
	case c.Timeout <= 0:
		return fmt.Errorf("%w: timeout must be positive", ErrConfig)
	case c.SessionTimeout < 0:
		return fmt.Errorf("%w: session-timeout must not be negative", ErrConfig)
	case c.MaxHTTPSessions < 0:
		return fmt.Errorf("%w: max-http-sessions must not be negative", ErrConfig)
	}
	return nil
}

// natsOptions are the connection options of cfg's identity.
func (c Config) natsOptions() []nats.Option {
	opts := []nats.Option{nats.Name("agentmem-mcp"), nats.MaxReconnects(-1)}
	if c.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(c.NATSCreds))
	}
	if c.NATSUser != "" {
		opts = append(opts, nats.UserInfo(c.NATSUser, c.NATSPassword))
	}
	return opts
}

// BindFlags registers cfg's flags on fs.
func BindFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.NATSURL, "nats-url", cfg.NATSURL, "NATS URL of the agentmem node")
	fs.StringVar(&cfg.NATSUser, "nats-user", cfg.NATSUser, "NATS user: with tenants, the agent's identity (e.g. agent-a1)")
	fs.StringVar(&cfg.NATSPassword, "nats-password", cfg.NATSPassword, "password of --nats-user (prefer the AGENTMEM_NATS_PASSWORD variable)")
	fs.StringVar(&cfg.NATSCreds, "nats-creds", cfg.NATSCreds, "NATS credentials file (JWT users)")
	fs.StringVar(&cfg.Agent, "agent", cfg.Agent, "agent id whose private memory the scope \"agent\" is (with tenants: the connection's own agent)")
	fs.StringVar(&cfg.HTTPAddr, "http", cfg.HTTPAddr, "serve Streamable HTTP on host:port (e.g. 127.0.0.1:8080) instead of stdio; no authentication of its own: whoever reaches it acts as this server's NATS identity")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "timeout of one service call")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "close an HTTP MCP session idle this long (0: never)")
	fs.IntVar(&cfg.MaxHTTPSessions, "max-http-sessions", cfg.MaxHTTPSessions, "most HTTP MCP sessions open at once (beyond: 503 max_http_sessions)")
	fs.Func("allowed-origins", "comma-separated browser origins (https://app.example) allowed besides the server's own; other Origins get 403", func(v string) error {
		cfg.AllowedOrigins = splitList(v)
		return nil
	})
	fs.Func("allowed-hosts", "comma-separated Host values (a DNS name of this server) allowed besides loopback and the listening address; other Hosts get 403", func(v string) error {
		cfg.AllowedHosts = splitList(v)
		return nil
	})
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// EnvName is the environment variable of a flag (envflag.Name).
func EnvName(flagName string) string { return envflag.Name(flagName) }

// ApplyEnv sets every flag of fs not given on the command line from its
// AGENTMEM_* variable (envflag.Apply).
func ApplyEnv(fs *flag.FlagSet, getenv func(string) string) error { return envflag.Apply(fs, getenv) }
