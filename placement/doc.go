// Package placement decides which node of a cluster serves each aggregate
// (session, agent, shared scope), with NATS itself as the record: no
// consensus code of our own.
//
// The id space is cut into a fixed number of partitions (Partition: FNV-1a
// of the aggregate id, modulo Config.Partitions). Ownership of a partition
// is a lease: the key p.<n> of a replicated JetStream KV bucket (Bucket,
// default MEM_PLACEMENT, at the log's replica count) whose value is the
// owner's node id. The bucket's MaxAge is the lease TTL: the owner rewrites
// its keys (compare-and-set on the revision it holds) every TTL/3; a key
// the owner stops rewriting ages out, the server writes a delete marker
// (LimitMarkerTTL, nats-server ≥ 2.11; older servers are polled), and the
// next owner creates it again.
//
// Who should own a partition is computed by every node alike: rendezvous
// hashing (highest FNV-1a of node id and partition) over the live nodes —
// the nodes whose heartbeat key n.<id> (JSON NodeInfo, rewritten every
// TTL/3) is present. So a joining node takes about 1/N of the partitions,
// and a leaving or dead node's partitions spread over the others.
//
// Safety. A node serves a partition only while its lease is valid by its
// own clock: from the moment before the write that created or refreshed
// the key, TTL minus a margin. The key on the server lives TTL from when
// the server stored that write, so a node stops believing in a lease
// before any other node can create the key again. A node that was paused
// past its lease (a stop-the-world pause, SIGSTOP) sees the lease expired
// when it resumes and forwards instead; a write already past that check
// meets the log's expected-last-subject-sequence fence: a conflict and a
// reload, never a fork.
//
// The bucket without quorum. No node can write a key then, so none can
// take a partition from another: while Hooks.BucketLost says so (the
// node's probe of the bucket's stream), a node keeps serving the
// partitions it holds past their leases, claims none, and Owner names the
// last owner seen (or fails at once with ErrBucketLost). Two owners at
// once remain possible around the bucket's return (another node creates
// an aged-out key before this node's probe sees the bucket back) and
// across a network partition; the fence above keeps their appends from
// forking a history. A lease past its expiry whose refreshes got no
// answer is held, not served, for Config.QuorumWait before it is dropped,
// so that a probe slower than the lease can still keep it; once the
// bucket is back it is refreshed, or dropped when the refresh is refused.
//
// Handover. Release (a joining node is now the better owner) and Leave
// (SIGTERM) mark the partition releasing, so new requests wait for the next
// owner; call OnRelease (the node passivates the partition's actors:
// queued commands finish, a snapshot is written) and then delete the key,
// which the next owner sees through its watch and creates at once.
package placement
