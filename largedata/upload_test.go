package largedata

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// upload sends data in parts of n bytes and returns the upload id.
func upload(t *testing.T, s *Store, owner string, data []byte, n int) string {
	t.Helper()
	id := ""
	for off := 0; off < len(data); off += n {
		end := min(off+n, len(data))
		got, received, err := s.PutPart(context.Background(), owner, id, uint64(off), data[off:end])
		if err != nil {
			t.Fatalf("part at %d: %v", off, err)
		}
		if received != uint64(end) {
			t.Fatalf("part at %d: received %d, want %d", off, received, end)
		}
		id = got
	}
	return id
}

// TestUploadCommit stores 20 MiB in 4 MiB parts: the committed object reads
// back byte-exact, a retried commit answers the same reference, the parts
// are gone, and nothing was readable before the commit.
func TestUploadCommit(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.MemoryBytes = 0 })
	ctx := context.Background()
	data := randomData(20 << 20)
	up := upload(t, s, "principal:a", data, 4<<20)
	if _, _, err := s.Get(ctx, up); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get by the upload id before commit: %v, want ErrNotFound", err)
	}
	if _, _, err := s.Commit(ctx, "principal:b", up, uint64(len(data)), "", nil, 0); !errors.Is(err, ErrUploadNotFound) {
		t.Fatalf("commit by another owner: %v, want ErrUploadNotFound", err)
	}
	ref, seq, err := s.Commit(ctx, "principal:a", up, uint64(len(data)), "application/octet-stream", map[string]string{"k": "v"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ref.GetSize() != uint64(len(data)) || ref.GetOwner() != "principal:a" || seq == 0 {
		t.Fatalf("ref %v seq %d", ref, seq)
	}
	_, back, err := s.Get(ctx, ref.GetId())
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("get: %v (%d bytes)", err, len(back))
	}
	again, seq2, err := s.Commit(ctx, "principal:a", up, uint64(len(data)), "application/octet-stream", nil, time.Hour)
	if err != nil || again.GetId() != ref.GetId() || seq2 != seq {
		t.Fatalf("retried commit: %v, %v seq %d; want %s seq %d", err, again, seq2, ref.GetId(), seq)
	}
	for off := uint64(0); off < uint64(len(data)); off += 4 << 20 {
		if _, err := s.up.GetInfo(ctx, partName(up, off)); err == nil {
			t.Errorf("part at %d still stored after the commit", off)
		}
	}
	_, part, err := s.GetRange(ctx, ref.GetId(), 5<<20, 1<<20)
	if err != nil || !bytes.Equal(part, data[5<<20:6<<20]) {
		t.Fatalf("range: %v (%d bytes)", err, len(part))
	}
	if _, tail, err := s.GetRange(ctx, ref.GetId(), uint64(len(data))-10, 1<<20); err != nil || !bytes.Equal(tail, data[len(data)-10:]) {
		t.Fatalf("range past the end: %v (%d bytes)", err, len(tail))
	}
	if _, _, err := s.GetRange(ctx, ref.GetId(), uint64(len(data))+1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("offset past the size: %v", err)
	}
}

// TestUploadErrors: a gap, a wrong size, a part past MaxBytes and an
// unknown upload are refused with clear errors, and a gap can be filled.
func TestUploadErrors(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.MaxBytes = 1 << 20 })
	ctx := context.Background()
	data := randomData(300 << 10)
	up, _, err := s.PutPart(ctx, "", "", 0, data[:100<<10])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPart(ctx, "", up, 200<<10, data[200<<10:]); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Commit(ctx, "", up, uint64(len(data)), "", nil, 0)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "no part at offset 102400") {
		t.Fatalf("commit with a gap: %v", err)
	}
	if _, _, err := s.Commit(ctx, "", up, 150<<10, "", nil, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("commit with a smaller size: %v", err)
	}
	if _, _, err := s.PutPart(ctx, "", up, 100<<10, data[100<<10:200<<10]); err != nil {
		t.Fatal(err)
	}
	ref, _, err := s.Commit(ctx, "", up, uint64(len(data)), "", nil, 0)
	if err != nil {
		t.Fatalf("commit once the gap is filled: %v", err)
	}
	if _, back, err := s.Get(ctx, ref.GetId()); err != nil || !bytes.Equal(back, data) {
		t.Fatalf("get: %v", err)
	}
	if _, _, err := s.PutPart(ctx, "", up, 1<<20-10, make([]byte, 11)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("part past MaxBytes: %v, want ErrTooLarge", err)
	}
	if _, _, err := s.PutPart(ctx, "", "", 5, []byte("x")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("new upload at offset 5: %v", err)
	}
	if _, _, err := s.Commit(ctx, "", strings.Repeat("ab", 16), 10, "", nil, 0); !errors.Is(err, ErrUploadNotFound) {
		t.Fatalf("commit of an unknown upload: %v", err)
	}
	if _, _, err := s.Commit(ctx, "", "../x", 10, "", nil, 0); !errors.Is(err, ErrUploadNotFound) {
		t.Fatalf("commit of a malformed upload id: %v", err)
	}
}

// TestUploadExpires: parts never committed are removed by the uploads
// bucket's TTL; the commit then says the upload is not found.
func TestUploadExpires(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.UploadTTL = time.Second })
	ctx := context.Background()
	up, _, err := s.PutPart(ctx, "", "", 0, []byte("partial"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.up.GetInfo(ctx, partName(up, 0)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the part is still stored 10 s after its 1 s TTL")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := s.Commit(ctx, "", up, 7, "", nil, 0); !errors.Is(err, ErrUploadNotFound) {
		t.Fatalf("commit of an expired upload: %v, want ErrUploadNotFound", err)
	}
}

// holds is a Holder that holds the ids in its set.
type holds struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (h *holds) Held(_ context.Context, ref *memoryv1.DataReference) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[ref.GetId()], nil
}

func (h *holds) set(id string, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids[id] = held
}

// TestHeldPastLease: data a Holder holds is served and kept by the sweep
// past its lease; once released, the sweep removes it and a read says it
// expired (naming the id), not merely "not found".
func TestHeldPastLease(t *testing.T) {
	e := newEnv(t)
	h := &holds{ids: map[string]bool{}}
	s := e.store(t, func(c *Config) { c.Holder = h; c.MemoryBytes = 0 })
	ctx := context.Background()
	kept, _, err := s.Put(ctx, []byte("still referred to"), "", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gone, _, err := s.Put(ctx, []byte("nobody refers to it"), "", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.set(kept.GetId(), true)
	e.clock.Advance(2 * time.Hour)
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1 expired", n, err)
	}
	if _, back, err := s.Get(ctx, kept.GetId()); err != nil || string(back) != "still referred to" {
		t.Fatalf("held data past its lease: %v", err)
	}
	_, _, err = s.Get(ctx, gone.GetId())
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), gone.GetId()) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("get of swept data: %v; want ErrExpired naming %s", err, gone.GetId())
	}
	if _, err := s.Ref(ctx, gone.GetId()); !errors.Is(err, ErrExpired) {
		t.Fatalf("ref of swept data: %v; want ErrExpired", err)
	}
	h.set(kept.GetId(), false)
	if _, _, err := s.Get(ctx, kept.GetId()); !errors.Is(err, ErrExpired) {
		t.Fatalf("get once released, before a sweep: %v; want ErrExpired", err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after release: %d, %v", n, err)
	}
	if _, _, err := s.Get(ctx, strings.Repeat("0", 32)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of an id never stored: %v; want ErrNotFound", err)
	}
}

func randomData(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
