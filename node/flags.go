package node

import (
	"flag"
	"strings"

	"github.com/agentmem/agentmem/internal/envflag"
)

// BindFlags registers the node's flags on fs, writing into cfg.
func BindFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory (JetStream store of the embedded server)")
	fs.StringVar(&cfg.NATSListen, "nats-listen", cfg.NATSListen, "host:port the embedded NATS server accepts clients on")
	fs.StringVar(&cfg.NATSURL, "nats-url", cfg.NATSURL, "use this external NATS instead of embedding one")
	fs.StringVar(&cfg.NATSCreds, "nats-creds", cfg.NATSCreds, "NATS credentials file")
	fs.StringVar(&cfg.NATSUser, "nats-user", cfg.NATSUser, "user of the node's own NATS connection")
	fs.StringVar(&cfg.NATSPassword, "nats-password", cfg.NATSPassword, "password of --nats-user (prefer the AGENTMEM_NATS_PASSWORD variable)")
	fs.StringVar(&cfg.NATSAPIUser, "nats-api-user", cfg.NATSAPIUser, "user of the service's own NATS connection (publish: _INBOX.>, _R_.> only)")
	fs.StringVar(&cfg.NATSAPIPassword, "nats-api-password", cfg.NATSAPIPassword, "password of --nats-api-user (prefer the AGENTMEM_NATS_API_PASSWORD variable)")
	fs.StringVar(&cfg.NATSAPICreds, "nats-api-creds", cfg.NATSAPICreds, "NATS credentials file of the service's connection")
	fs.StringVar(&cfg.Tenants, "tenants", cfg.Tenants, "tenants file (JSON): verified NATS identities -> principals, roles, memberships, limits; empty = single-user node")
	fs.StringVar(&cfg.NATSConfig, "nats-config", cfg.NATSConfig, "nats-server config file for the embedded server (users, permissions)")
	fs.StringVar(&cfg.Sync, "sync", cfg.Sync, "JetStream sync mode of the embedded server: default (survives kill -9) or always (fsync per write)")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "stream replicas (3 on a NATS cluster)")
	fs.StringVar(&cfg.NodeID, "node-id", cfg.NodeID, "this node's id in the cluster (unique, stable across restarts); empty = the one kept in <data-dir>/node-id")
	fs.IntVar(&cfg.Placement.Partitions, "partitions", cfg.Placement.Partitions, "partitions of the id space placed on the nodes (equal on every node of a cluster)")
	fs.DurationVar(&cfg.Placement.LeaseTTL, "lease-ttl", cfg.Placement.LeaseTTL, "lease of a node on its partitions: the longest a dead node's aggregates stay unserved")
	fs.StringVar(&cfg.HTTPAddr, "http", cfg.HTTPAddr, "host:port for Prometheus /metrics, /healthz, the HTTP API /v1/ and the inspector /ui/ (empty disables; without --tenants both answer loopback clients only)")
	fs.Func("http-origins", "comma-separated browser origins (scheme://host:port) the HTTP API also answers besides its own", func(v string) error {
		cfg.HTTPOrigins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				cfg.HTTPOrigins = append(cfg.HTTPOrigins, o)
			}
		}
		return nil
	})
	fs.Func("ui-allowed-hosts", "comma-separated Host names the inspector /ui/ answers to besides loopback and the listener's address", func(v string) error {
		cfg.UIAllowedHosts = nil
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				cfg.UIAllowedHosts = append(cfg.UIAllowedHosts, h)
			}
		}
		return nil
	})
	fs.Int64Var(&cfg.MinFreeBytes, "min-free-bytes", cfg.MinFreeBytes, "free bytes the embedded server's disk keeps: below, writes answer 503 at once until space returns (0: only when full; -1: no check, only JetStream's own faults)")
	fs.StringVar(&cfg.Stream, "stream", cfg.Stream, "JetStream stream name")
	fs.IntVar(&cfg.ProjectionPartitions, "projection-partitions", cfg.ProjectionPartitions, "split the read model into C corpus partitions (a user's sessions and scopes stay together), each node keeping and answering only those it owns; 0 = every node projects the whole log (experimental: no embeddings, retention or vector search with it)")
	fs.IntVar(&cfg.LogPartitions, "log-partitions", cfg.LogPartitions, "streams the log is in: 1 = the one stream --stream; K > 1 = <stream>_P0..K-1, each aggregate in the stream of its id's placement hash (equal on every node)")
	fs.BoolVar(&cfg.LogAllowDelete, "log-allow-delete", cfg.LogAllowDelete, "create a NEW log stream that allows deletes and purges, as erasure needs (false: deny them, and erase answers 501); an existing stream keeps its settings: move one that denies them with `replay migrate-log`")
	fs.DurationVar(&cfg.DuplicateWindow, "dedupe-window", cfg.DuplicateWindow, "JetStream Nats-Msg-Id window of the stream (retries are recognised at any age through the command index)")
	fs.BoolVar(&cfg.Projector, "projector", cfg.Projector, "run the projector (bbolt read models: recall, search, session lists) in this process")
	fs.DurationVar(&cfg.Actors.IdleTimeout, "idle-timeout", cfg.Actors.IdleTimeout, "passivate a session actor idle this long")
	fs.Uint64Var(&cfg.Actors.SnapshotEvery, "snapshot-every", cfg.Actors.SnapshotEvery, "snapshot a session every N batches")
	fs.StringVar(&cfg.LLM.BaseURL, "llm-url", cfg.LLM.BaseURL, "OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1) to rewrite summaries; empty = extractive only")
	fs.StringVar(&cfg.LLM.Model, "llm-model", cfg.LLM.Model, "model name sent to --llm-url")
	fs.StringVar(&cfg.LLM.APIKey, "llm-api-key", cfg.LLM.APIKey, "bearer token for --llm-url (prefer the AGENTMEM_LLM_API_KEY variable)")
	fs.DurationVar(&cfg.LLM.Timeout, "llm-timeout", cfg.LLM.Timeout, "timeout of one summary rewrite")
	fs.BoolVar(&cfg.Consolidation.OnTerminate, "consolidate", cfg.Consolidation.OnTerminate, "extract the facts a session's user states into user:<id> (and episodes into agent:<id>) when the session terminates")
	fs.IntVar(&cfg.Consolidation.SummaryAfter, "consolidate-episode-summary", cfg.Consolidation.SummaryAfter, "summarize an agent's episode with its similar older ones once there are this many (0 = the default 8, at most 9; -1 = never)")
	fs.IntVar(&cfg.Consolidation.EveryTurns, "consolidate-every-turns", cfg.Consolidation.EveryTurns, "also consolidate a session after every N user turns (0 = only at termination and on demand)")
	fs.BoolVar(&cfg.Consolidation.LLM, "consolidate-llm", cfg.Consolidation.LLM, "extract facts with the --llm-url endpoint (the deterministic extractor is the fallback)")
	fs.StringVar(&cfg.Embeddings.BaseURL, "embed-url", cfg.Embeddings.BaseURL, "OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1) whose /embeddings vectors are fused with BM25 in session search; empty = BM25 only")
	fs.StringVar(&cfg.Embeddings.Model, "embed-model", cfg.Embeddings.Model, "embedding model name sent to --embed-url (changing it drops the stored vectors)")
	fs.StringVar(&cfg.Embeddings.APIKey, "embed-api-key", cfg.Embeddings.APIKey, "bearer token for --embed-url (prefer the AGENTMEM_EMBED_API_KEY variable)")
	fs.IntVar(&cfg.Embeddings.Dimensions, "embed-dimensions", cfg.Embeddings.Dimensions, "dimensions asked of --embed-url (0 = the model's own)")
	fs.DurationVar(&cfg.Embeddings.Timeout, "embed-timeout", cfg.Embeddings.Timeout, "timeout of one embeddings request (a query waits at most this long, then searches by BM25 alone)")
	fs.Int64Var(&cfg.Data.MemoryBytes, "data-memory-bytes", cfg.Data.MemoryBytes, "bytes of large data kept in the in-memory LRU tier")
	fs.DurationVar(&cfg.Data.DefaultTTL, "data-ttl", cfg.Data.DefaultTTL, "lease of large data put without a ttl")
	fs.Int64Var(&cfg.Data.MaxBytes, "data-max-bytes", cfg.Data.MaxBytes, "largest large data object (data.put, uploads in parts included); larger is 413")
	fs.DurationVar(&cfg.Actors.EpisodicTTL, "episodic-ttl", cfg.Actors.EpisodicTTL, "TTL of episodic entries written without one, in scopes whose episodic_ttl_seconds is 0 (whole seconds; 0 = never)")
	fs.DurationVar(&cfg.ArchiveAfter, "archive-after", cfg.ArchiveAfter, "archive a terminated session this long after its last change (0 = never; runs where the projector runs)")
	fs.DurationVar(&cfg.LogWindow, "log-window", cfg.LogWindow, "time-travel window of the bounded log: a scope's messages older than this are replaced by a baseline of its state (0 = never; runs where the projector runs)")
	fs.DurationVar(&cfg.DeleteAfter, "delete-after", cfg.DeleteAfter, "erase an archived session (and its session scope) this long after it was archived (0 = never, the default; runs where the projector runs)")
	fs.IntVar(&cfg.Actors.MaxConcurrentRecoveries, "max-recoveries", cfg.Actors.MaxConcurrentRecoveries, "concurrent actor recoveries at most")
}

// EnvName is the environment variable of a flag (envflag.Name).
func EnvName(flagName string) string { return envflag.Name(flagName) }

// ApplyEnv sets every flag of fs not given on the command line from its
// AGENTMEM_* variable (envflag.Apply).
func ApplyEnv(fs *flag.FlagSet, getenv func(string) string) error { return envflag.Apply(fs, getenv) }
