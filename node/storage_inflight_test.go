package node

import (
	"io"
	"log/slog"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// A write being stored counts as taken: with a snapshot of megabytes in
// flight, a write that fits the disk's free space alone is refused when
// the two together would cross --min-free-bytes, and let through again
// once the snapshot is stored.
func TestWritesBeingStoredCountAsTaken(t *testing.T) {
	srv, _ := natsembed.StartForTest(t)
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	const room = 64 << 20 // what the floor leaves: well above what the other tests write meanwhile
	w := newStorageWatch(srv, nil, []string{dir}, free-room, 0, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), newStorageMetrics(prometheus.NewRegistry(), nil))
	w.state.Store(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, FreeBytes: free})
	if err := w.refuseSpace(8<<20, "a write", false); err != nil {
		t.Fatalf("an 8 MiB write with %d MiB above the floor: %v", room>>20, err)
	}
	done := w.storing(room - 4<<20) // a snapshot being put
	if err := w.refuseSpace(8<<20, "a write", false); err == nil {
		t.Fatal("an 8 MiB write was let through while a snapshot of all but 4 MiB of the room was being stored")
	}
	done()
	if err := w.refuseSpace(8<<20, "a write", false); err != nil {
		t.Fatalf("after the snapshot was stored: %v", err)
	}
}
