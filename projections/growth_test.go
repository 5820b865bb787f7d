package projections

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem/agentmem/internal/testdisk"
)

// mountTmpfs mounts a tmpfs of size bytes for the test (testdisk.Mount).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	return testdisk.Mount(t, size, "the real small-disk test")
}

func diskFree(t *testing.T, dir string) int64 {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize)
}

// fileSpace is the apparent size of path and the bytes it takes on disk.
func fileSpace(t *testing.T, path string) (size, used int64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Size, st.Blocks * 512
}

// touchAll reads every page of path through a shared mapping, as bbolt
// reads its file: on a tmpfs that takes a page for each hole read.
func touchAll(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := fileSpace(t, path)
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(m) }()
	var sum byte
	for i := 0; i < len(m); i += 4096 {
		sum += m[i]
	}
	_ = sum
}

// growthLog appends n batches of 40 messages of 1 KiB to l.
func growthLog(l *logBuilder, from, n int) []Decoded {
	start := len(l.recs)
	for i := from; i < from+n; i++ {
		texts := make([]string, 40)
		for k := range texts {
			texts[k] = fmt.Sprintf("batch %d message %d %s", i, k, strings.Repeat(strconv.Itoa(i*k), 1024/max(1, len(strconv.Itoa(i*k)))))
		}
		l.appendMsgs("s1", texts...)
	}
	return l.recs[start:]
}

// TestDiskGrowthBounded: the projection file grows by at most growStep
// beyond what it holds (bbolt's default was 16 MiB at every growth, with
// the 1 GiB initial mapping): touched through the mapping on a tmpfs
// (where a hole read takes a page), the file may not take more than that
// from the disk.
func TestDiskGrowthBounded(t *testing.T) {
	dir := mountTmpfs(t, 64<<20)
	path := filepath.Join(dir, "proj.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := newLogBuilder(t)
	l.create("s1", "u", "a")
	mustApply(t, s, l.recs)
	for i := range 20 {
		mustApply(t, s, growthLog(l, i*5, 5))
		size, used := fileSpace(t, path)
		if size-used > growStep+64<<10 {
			t.Fatalf("after %d batches the file is %d bytes, %d of them holes: grows by more than %d at once", (i+1)*5, size, size-used, growStep)
		}
	}
	before := diskFree(t, dir)
	touchAll(t, path)
	size, used := fileSpace(t, path)
	t.Logf("file %d bytes, %d on disk; reading it all took %d bytes of the disk", size, used, before-diskFree(t, dir))
	if took := before - diskFree(t, dir); took > growStep+64<<10 {
		t.Errorf("reading the file took %d bytes of the disk, want at most %d", took, growStep)
	}
}

// TestDiskRoomBoundsGrowth: with SetRoom (free space less a 4 MiB floor)
// the file stops growing before the floor: ApplyBatch fails with ErrNoRoom
// and writes nothing, free space stays at the floor; once space returns
// the same records apply.
func TestDiskRoomBoundsGrowth(t *testing.T) {
	const floor = 4 << 20
	dir := mountTmpfs(t, 16<<20)
	path := filepath.Join(dir, "proj.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetRoom(func() int64 { return diskFree(t, dir) - floor })
	l := newLogBuilder(t)
	l.create("s1", "u", "a")
	mustApply(t, s, l.recs)

	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, diskFree(t, dir)-floor-(3<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes free, floor %d", diskFree(t, dir), floor)
	var refused []Decoded
	for i := 0; i < 200 && refused == nil; i++ {
		recs := growthLog(l, i, 1)
		err := s.ApplyBatch(recs)
		switch {
		case errors.Is(err, ErrNoRoom):
			refused = recs
			t.Logf("refused after %d batches: %v", i, err)
		case err != nil:
			t.Fatalf("batch %d: %v, want nil or ErrNoRoom", i, err)
		}
		if free := diskFree(t, dir); free < floor {
			t.Fatalf("after batch %d: %d bytes free, below the %d floor", i, free, floor)
		}
	}
	if refused == nil {
		t.Fatal("the projection grew past the room without refusing")
	}
	if got, want := s.AppliedSeq(), refused[0].Seq-1; got != want {
		t.Errorf("applied seq %d after the refusal, want %d", got, want)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, refused)
	if got, want := s.AppliedSeq(), refused[len(refused)-1].Seq; got != want {
		t.Errorf("applied seq %d once space returned, want %d", got, want)
	}
}
