// Package natsembed runs a NATS server with JetStream inside the process.
//
// It is what cmd/node starts by default ("one command starts a working node")
// and what tests use through StartForTest. The server listens on a TCP
// address so that workers in other processes and languages can connect; the
// node itself connects to ClientURL like any other client.
//
// # Durability
//
// JetStream stores streams under Config.DataDir. A message is acknowledged only
// after JetStream stored it in its file store. With SyncAlways false (the
// default) the store is written to the OS page cache and fsynced periodically:
// acknowledged writes survive a process crash (kill -9) but not a power loss.
// With SyncAlways true every write is fsynced before the acknowledgement, so
// acknowledged writes also survive power loss, at a large cost in latency.
// A replicated cluster (R3 streams) is the other way to survive losing a machine;
// it is configured outside this package.
//
// # Recovery
//
// On Start the server recovers its streams from DataDir: JetStream checks
// every message block and truncates a torn tail left by a crash, so the log
// restarts at the last complete message. Nothing in this package rewrites
// or deletes stored data.
package natsembed
