// Package replay is the operator tool of agentmem (cmd/replay): it reads the
// event log (the JetStream stream, MEM by default) of a running NATS or of a
// stopped node's data directory, and
//
//   - Rebuild: replays the whole log into the bbolt projection with
//     projections.Rebuild (written aside, renamed over the file: safe to
//     interrupt and rerun), with a progress bar and a summary;
//   - Verify: rebuilds into a temporary directory beside the live file and
//     compares the digest of every bucket (ErrDiffers, exit status 1);
//   - Inspect: time travel — replays one session's batches up to a stream
//     sequence or a time into a fresh segmented.State and prints its layers
//     and the exact ContextReply an LLM was sent then;
//   - Export / Import: the log as JSON lines and back into an empty stream
//     (or, --partitions K, the K partition streams of a log in partitions);
//   - Stats: streams, aggregates per kind, projection lag, sizes;
//   - MigrateLog (migrate-log): offline, moves the log to a stream that
//     allows deletes and purges with every sequence kept
//     (events.MigrateAllowDelete: resumable, compares every message);
//     with --partitions K (MigrateLogPartitions) it moves the log from
//     its one stream to K partition streams instead
//     (events.MigrateToPartitions).
//   - Compact (compact): offline, removes deleted content's bytes from
//     every file of the data dir: each stream rewritten through a mirror
//     (events.CompactStream: same sequences, resumable after kill -9), the
//     projection rewritten with its live keys (projections.CompactFile).
//
// Each command is one exported function taking a config and an io.Writer;
// Run parses a command line into them (cmd/replay only wires signals and the
// exit status). Rebuild and Verify never wait forever: a log that cannot be
// read whole (missing stream, a gap, a purged head, no message for
// --idle-timeout) ends them with an error saying so, exit status 3
// (ExitCode).
//
// # Connection
//
// With Conn.NATSURL the tool talks to a running NATS. With only
// Conn.DataDir it starts an embedded nats-server on DataDir/jetstream
// (127.0.0.1, random port) for the duration of the command and shuts it down
// at the end: the node must be stopped (two servers must never share a
// store). It holds the data dir's lock (internal/dirlock) meanwhile, as a
// node does, so on a running node's directory the command fails at once
// with an error wrapping dirlock.ErrLocked that names the node. Reads use an ephemeral, unacknowledged, in-memory pull consumer
// bounded by what the stream held when the command started, deleted at the
// end; nothing is written to the stream except by Import and MigrateLog. Rebuild, Verify
// and Stats open the projection file, which a running node holds locked.
//
// # Export format
//
// One JSON object per line, one line per stream message, in stream order:
//
//	{"seq": 17, "subject": "mem.ev.session.s1", "time": "2025-01-02T03:04:05.123Z",
//	 "batch": {<protojson EventBatch: command_id, aggregate_*, version, events as Any…>}}
//
// seq and time are the original stream's. A message whose events this build
// cannot render as JSON (an old type with no Go type left) is written with
// "data" (base64 of the stored bytes) instead of "batch".
//
// # Import rule
//
// Import refuses a stream holding messages (ErrStreamNotEmpty) and creates a
// missing one. It appends the lines in file order (seq must increase), each
// with Nats-Expected-Last-Subject-Sequence = the last sequence Import wrote
// on that subject (0 first) and Nats-Msg-Id = "<kind>.<id>.<command id>" (the
// command id scoped by its aggregate, as a node writes it), so the new
// stream holds the same subjects, order and batches. The stream sequences
// and times are the new stream's: they equal the export's only when the
// original stream had no gaps (no purge, no messages of other subjects in
// between, first seq 1). Anything that refers to an old sequence (a
// recorded --at-seq, a client's min_seq, ToolResultRef.message_seq inside
// the batches, the checkpoint of a projection built from the old stream) is
// then meaningless on the new stream: rebuild the projection after an
// import. An interrupted import leaves a prefix: delete the stream and import
// again.
//
// # Time travel
//
// Inspect applies only stored batches (events record every decision:
// summaries, token counts, evictions), never a tokenizer, summarizer or
// policy, so the context it prints at sequence N is the one the node
// returned right after the session's last batch at or before N (a test
// checks proto.Equal with the live replies). --at-time compares with the
// command time recorded in the batch (time_unix_nano, kept by export and
// import), not the stream's arrival time.
package replay
