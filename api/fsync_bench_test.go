package api_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentmem/agentmem/node"
)

// BenchmarkAppendFsync is the one-client append of BenchmarkAppendRoundTrip
// on a node run with --sync always (every write fsynced before its ack),
// beside, in the same run and on the same disk:
//
//   - raw-js-publish-1: a plain JetStream publish of the same EventBatch
//     bytes to a file stream of the same server (fsynced the same way);
//   - sqlite-full-1: the peer's store, SQLite (modernc.org/sqlite) in WAL
//     mode with synchronous=FULL, one INSERT of the same message content per
//     transaction.
func BenchmarkAppendFsync(b *testing.B) {
	_, c, js := benchNodeWithRaw(b, func(cfg *node.Config) { cfg.Sync = node.SyncAlways })
	payload := storedBatch(b, c, js)

	b.Run("raw-js-publish-1", func(b *testing.B) { benchRawPublish(b, js, payload) })
	b.Run("sqlite-full-1", func(b *testing.B) {
		db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "peer.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		for _, q := range []string{
			"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
			"CREATE TABLE messages (session TEXT, seq INTEGER, role TEXT, content TEXT, PRIMARY KEY (session, seq))",
		} {
			if _, err := db.Exec(q); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			t0 := time.Now()
			if _, err := db.Exec("INSERT INTO messages VALUES (?, ?, 'user', ?)",
				fmt.Sprintf("s%d", i%16), i, benchContent(i)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat, time.Since(start), "inserts/s")
	})
	b.Run("1client", func(b *testing.B) { benchOneClient(b, c) })
}
