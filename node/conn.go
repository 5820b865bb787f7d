package node

import (
	"context"
	"crypto/rand"
	"path/filepath"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
)

// connect starts the embedded server (unless cfg names an external NATS)
// and opens the node's two connections: n.nc for the log, the projector,
// snapshots and large data; n.apiNC for the service, which should be
// allowed to publish replies only (no confused deputy).
//
// On the single-user embedded server (no --nats-config) the node makes both
// users itself, with random passwords (natsembed.NodeUsers). Otherwise the
// operator's config names them (--nats-user, --nats-api-user); without an
// API user the service shares the node's connection, and a warning says so.
//
// An external server that is not up yet is waited for (connectRetry); a
// refused user is not.
func (n *Node) connect(ctx context.Context, cfg Config) error {
	n.url = cfg.NATSURL
	nodeOpts, apiOpts := credentials(cfg.NATSUser, cfg.NATSPassword, cfg.NATSCreds), credentials(cfg.NATSAPIUser, cfg.NATSAPIPassword, cfg.NATSAPICreds)
	if cfg.NATSURL == "" {
		ecfg := natsembed.DefaultConfig()
		ecfg.DataDir = filepath.Join(cfg.DataDir, "jetstream")
		ecfg.Listen = cfg.NATSListen
		ecfg.SyncAlways = cfg.Sync == SyncAlways
		ecfg.ConfigFile = cfg.NATSConfig
		// Its warnings and errors (a full disk, JetStream turned off) in
		// the node's log; its notices at debug.
		ecfg.Logger = natsembed.NewSlogLogger(n.logger)
		if cfg.NATSConfig == "" {
			users := &natsembed.NodeUsers{NodePassword: rand.Text(), APIPassword: rand.Text(), Stream: cfg.Stream}
			if cfg.LogPartitions > 1 {
				for i := range cfg.LogPartitions {
					users.LogStreams = append(users.LogStreams, events.PartitionStream(cfg.Stream, i, cfg.LogPartitions))
				}
			}
			ecfg.NodeUsers = users
			nodeOpts = []nats.Option{nats.UserInfo(natsembed.NodeUser, users.NodePassword)}
			apiOpts = []nats.Option{nats.UserInfo(natsembed.APIUser, users.APIPassword)}
		}
		var err error
		if n.embedded, err = natsembed.Start(ecfg); err != nil {
			return err
		}
		n.url = n.embedded.ClientURL()
		n.logger.Info("embedded NATS started", "url", n.url, "store", ecfg.DataDir, "sync", cfg.Sync)
	}
	// No reconnect buffer: an append published while disconnected fails at
	// once (503) instead of being flushed minutes later, after the actor
	// already answered and moved on.
	common := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectBufSize(-1)}
	var err error
	if n.nc, err = n.connectRetry(ctx, "the node's", "--nats-user/--nats-password/--nats-creds", n.url,
		append(append(nodeOpts, nats.Name("agentmem-node")), common...)...); err != nil {
		return err
	}
	if len(apiOpts) == 0 {
		n.logger.Warn("the service shares the node's NATS connection and its permissions; give it a user that may publish replies only (--nats-api-user, see the README's security model)")
		n.apiNC = n.nc
		return nil
	}
	if n.apiNC, err = n.connectRetry(ctx, "the service's", "--nats-api-user/--nats-api-password/--nats-api-creds", n.url,
		append(append(apiOpts, nats.Name("agentmem-api")), common...)...); err != nil {
		return err
	}
	return nil
}

// credentials are the connect options of a user/password or a creds file.
func credentials(user, password, creds string) []nats.Option {
	var opts []nats.Option
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, password))
	}
	return opts
}
