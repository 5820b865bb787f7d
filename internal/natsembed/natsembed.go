package natsembed

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultMaxPayload is the largest message the embedded server accepts unless
// told otherwise (8 MiB; the NATS default is 1 MiB).
const DefaultMaxPayload int32 = 8 << 20

// readyTimeout bounds how long Start waits for the server to accept clients.
const readyTimeout = 10 * time.Second

// Errors returned by this package.
var (
	// ErrInvalidConfig is returned (wrapped) by Config.Validate and Start when
	// the configuration is unusable.
	ErrInvalidConfig = errors.New("natsembed: invalid config")
	// ErrNotReady is returned by Start when the server did not accept
	// connections within 10 seconds.
	ErrNotReady = errors.New("natsembed: server not ready for connections")
	// ErrAddrInUse is returned (wrapped, with the address and the OS error)
	// by Start when the listen address is taken, by another NATS server or
	// node for example. Start returns it at once.
	ErrAddrInUse = errors.New("natsembed: address in use")
	// ErrStart is returned (wrapped, with the server's message) by Start
	// when the server reported a fatal error while starting: it cannot
	// listen, or JetStream cannot use its store directory.
	ErrStart = errors.New("natsembed: server failed to start")
)

// Config configures an embedded server.
type Config struct {
	// DataDir is the JetStream store directory (required).
	DataDir string
	// Listen is the client address, host:port. Port -1 picks a random free port.
	Listen string
	// SyncAlways fsyncs every JetStream write before acknowledging it
	// (server.Options.SyncAlways): survives power loss, costs latency.
	SyncAlways bool
	// ConfigFile is an optional nats-server configuration file (accounts,
	// users, permissions, TLS...). It is loaded first; the fields of this
	// Config then override what they name (listen address, store dir, sync,
	// max payload, server name). JetStream is always enabled.
	ConfigFile string
	// MaxPayload is the largest message accepted; 0 means DefaultMaxPayload.
	MaxPayload int32
	// ServerName names the server (cluster and monitoring); optional.
	ServerName string
	// Logger receives the server's logs (NewSlogLogger adapts a
	// slog.Logger); nil means no logs at all. A fatal
	// error is passed to its Errorf, not its Fatalf: the embedded server
	// never exits the process (Start returns the error instead).
	Logger server.Logger
	// Debug enables the server's debug logs (only with a Logger).
	Debug bool
	// NodeUsers, when set and there is no ConfigFile, gives the agentmem
	// node's two connections users of their own (see NodeUsers); every
	// other client is then the anonymous user with every right, as on a
	// server without authorization.
	NodeUsers *NodeUsers
}

// Users of a single-user embedded server.
const (
	NodeUser      = "agentmem-node"
	APIUser       = "agentmem-api"
	AnonymousUser = "anonymous"
)

// NodeUsers are the passwords of the node's own users on a single-user
// embedded server:
//
//   - NodeUser (the log, the projector, snapshots, large data) may do
//     anything but publish into the service's own requests (mem.v1.>)
//     and delete the log stream (it purges subjects of it: erasure,
//     erase);
//   - APIUser (the service: it subscribes to mem.v1.> and $SRV.>) may
//     publish only replies (_INBOX.>, _R_.>), so no request, whatever
//     reply subject it names, can make the service publish elsewhere — not
//     even through the $SRV handlers of the micro library, which answer any
//     reply subject.
//
// Clients connecting without credentials are AnonymousUser, with every
// right: the single-user node stays as open as before.
type NodeUsers struct {
	NodePassword string
	APIPassword  string
	// Stream is the log stream NodeUser may not delete.
	Stream string
	// LogStreams, when set (the log in partitions), are the streams
	// NodeUser may not delete instead of Stream.
	LogStreams []string
}

// NodePermissions are the publish/subscribe rights of the node's store
// connection (NodeUser); streams are the log's streams (stream, or the
// partitions' streams).
func NodePermissions(streams ...string) *server.Permissions {
	deny := []string{"mem.v1.>"}
	for _, s := range streams {
		deny = append(deny, "$JS.API.STREAM.DELETE."+s)
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{">"},
			Deny: deny},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"mem.v1.>"}},
	}
}

// APIPermissions are the rights of the service connection (APIUser).
func APIPermissions() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"_INBOX.>", "_R_.>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"mem.v1.>", "$SRV.>", "_INBOX.>"}},
	}
}

// DefaultConfig returns the configuration cmd/node uses unless told otherwise:
// data under ./data, the standard client port on loopback, 8 MiB payloads.
func DefaultConfig() Config {
	return Config{
		DataDir:    "./data",
		Listen:     "127.0.0.1:4222",
		MaxPayload: DefaultMaxPayload,
	}
}

// Validate reports the first problem of the configuration, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: DataDir: required", ErrInvalidConfig)
	}
	if _, _, err := splitListen(c.Listen); err != nil {
		return fmt.Errorf("%w: Listen: %v", ErrInvalidConfig, err)
	}
	if c.MaxPayload < 0 {
		return fmt.Errorf("%w: MaxPayload: must be >= 0, got %d", ErrInvalidConfig, c.MaxPayload)
	}
	return nil
}

func splitListen(listen string) (string, int, error) {
	if listen == "" {
		return "", 0, errors.New("required (host:port)")
	}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < server.RANDOM_PORT || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q (0..65535, or -1 for a random port)", portStr)
	}
	return host, port, nil
}

// options builds the nats-server options from the configuration.
func (c Config) options() (*server.Options, error) {
	host, port, err := splitListen(c.Listen)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{}
	if c.ConfigFile != "" {
		opts, err = server.ProcessConfigFile(c.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("natsembed: config file %s: %w", c.ConfigFile, err)
		}
	}
	opts.Host = host
	opts.Port = port
	opts.JetStream = true
	opts.StoreDir = c.DataDir
	opts.SyncAlways = c.SyncAlways
	if opts.JetStreamMaxStore <= 0 {
		// Without a configured max_file_store nats-server takes 75% of the
		// space free when JetStream starts (plus what it recovered): on a
		// nearly full disk that is less than it stores already, and it
		// refuses every write with "insufficient resources", a placement
		// lease of a hundred bytes included, so the node could not start.
		// The node's own free-space check (--min-free-bytes) guards the
		// disk instead; JetStream's limit is the disk's size, at least 1 TB.
		opts.JetStreamMaxStore = max(diskSize(c.DataDir), server.JetStreamMaxStoreDefault)
	}
	opts.MaxPayload = c.MaxPayload
	if opts.MaxPayload == 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if c.ServerName != "" {
		opts.ServerName = c.ServerName
	}
	if c.NodeUsers != nil && c.ConfigFile == "" {
		opts.Users = []*server.User{
			{Username: NodeUser, Password: c.NodeUsers.NodePassword, Permissions: NodePermissions(c.NodeUsers.logStreams()...)},
			{Username: APIUser, Password: c.NodeUsers.APIPassword, Permissions: APIPermissions()},
			{Username: AnonymousUser},
		}
		opts.NoAuthUser = AnonymousUser
	}
	// The process owns signals and logging, not the embedded server.
	opts.NoSigs = true
	opts.NoLog = c.Logger == nil
	opts.Debug = c.Debug && c.Logger != nil
	opts.DisableJetStreamBanner = true
	return opts, nil
}

// diskSize is the size of the file system holding dir, or of the nearest
// parent that exists (0: unknown).
func diskSize(dir string) int64 {
	for d := dir; ; d = filepath.Dir(d) {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(d, &fs); err == nil {
			return int64(fs.Blocks) * int64(fs.Bsize)
		}
		if d == filepath.Dir(d) {
			return 0
		}
	}
}

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns       *server.Server
	opts     *server.Options // what the server started with (RestartJetStream)
	restart  sync.Mutex      // one RestartJetStream at a time
	shutdown sync.Once
}

// Start starts a server and waits up to 10 seconds for it to accept client
// connections. A taken listen address (ErrAddrInUse) or another error the
// server reports while starting (ErrStart) fails it at once. On error
// nothing is left running.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := cfg.options()
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: new server: %w", err)
	}
	next := cfg.Logger
	if sl, ok := next.(slogLogger); ok && cfg.NodeUsers != nil && cfg.ConfigFile == "" {
		sl.ownUsers = true
		next = sl
	}
	logger := &startLogger{next: next}
	ns.SetLoggerV2(logger, cfg.Debug && cfg.Logger != nil, false, false)
	// Start returns once the server listens for clients or gave up: it
	// reports why with Fatalf and goes on without listening, so the failure
	// is known here, without waiting for readiness.
	ns.Start()
	if err := logger.fatal(); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		if cause := errors.Unwrap(err); errors.Is(cause, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: %s (another NATS server or node listening there?): %w", ErrAddrInUse, cfg.Listen, cause)
		}
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if !ns.ReadyForConnections(readyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, ErrNotReady
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsembed: JetStream did not start (store dir %s)", cfg.DataDir)
	}
	return &Server{ns: ns, opts: opts}, nil
}

// ClientURL is the URL clients connect to, e.g. nats://127.0.0.1:4222.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NATS returns the underlying server (monitoring, account lookups, tests).
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it has stopped. Acknowledged
// JetStream writes are on disk when it returns. It is safe to call more than
// once and from several goroutines.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
}

// logStreams are the streams NodeUser may not delete.
func (u *NodeUsers) logStreams() []string {
	if len(u.LogStreams) > 0 {
		return u.LogStreams
	}
	return []string{u.Stream}
}
