// Package node wires one agentmem node: an embedded nats-server with
// JetStream (or a connection to an external NATS), the event log and
// snapshot store, the session actors, the memory micro service and the
// Prometheus /metrics endpoint. cmd/node only maps flags onto Config.
//
// One owner per data dir: Start first takes an exclusive lock on the data
// dir (internal/dirlock, <data-dir>/LOCK) when it embeds NATS or runs the
// projector, and fails at once, naming the holder, if another process has
// it. The kernel releases it if the process dies.
//
// Shutdown order (Run returns when ctx ends): stop taking requests and wait
// for in-flight replies, passivate every actor (each writes a snapshot),
// close the NATS connection, stop the embedded server, release the data dir.
//
// # The log underneath the node
//
// A node creates its log stream (deny_delete, deny_purge; see package
// events) only at start, and only when its projection holds nothing: on a
// stream that is missing while the projection holds events, or that ends
// before the projection's checkpoint, Start fails with
// projections.ErrLogBehind ("projection at seq N but stream MEM ends at M:
// the log was deleted or truncated; rebuild or restore"). A node without a
// projector has no checkpoint to compare and starts on whatever it finds.
//
// While it runs, a node never recreates the stream. If an operator deletes
// it: appends and activations answer 503 (about half a second for a publish
// nobody answers, at once afterwards); a live actor answers reads from its
// state until a failed write restarts it, then 503; min_seq queries answer
// 503 after their wait, plain queries from the projection; the projector
// stops with an error; Shutdown returns as usual. If a subject or the stream is purged (possible only where
// deny_purge could not be set), the purged aggregates answer 503 naming the
// sequence the log lost, never 409. A background check reads the stream
// every 2s, logs an error once per change of what it observes (missing,
// went back, lost messages, ends before the projection) and sets the gauge
// agentmem_log_healthy (1 healthy, 0 not); a loss stays reported until the
// node restarts. Messages the node removes on purpose (erase, retention,
// the bounded log's compaction) are no loss: each removal is in the
// removal ledger before a message goes, and the check accepts exactly the
// sequences the ledger lists (or that lie below the compaction baseline).
package node
