package projections

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeBolt fills a bbolt file with n values of size bytes in bucket "b"
// (value i holds marker(i)), then deletes the odd ones.
func writeBolt(tb testing.TB, path string, n, size int) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, boltOptions())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	val := func(i int) []byte {
		return append([]byte(fmt.Sprintf("VALUE-%06d-", i)), bytes.Repeat([]byte{'v'}, size)...)
	}
	for start := 0; start < n; start += 1000 {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for i := start; i < min(n, start+1000); i++ {
				if err := b.Put(fmt.Appendf(nil, "k%06d", i), val(i)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i := 1; i < n; i += 2 {
			if err := b.Delete(fmt.Appendf(nil, "k%06d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
}

// TestCompactFileDropsDeletedValues: a deleted key's value is still in the
// file after the delete and in none after CompactFile; live keys read the
// same, and a leftover .compact file is replaced.
func TestCompactFileDropsDeletedValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	writeBolt(t, path, 200, 100)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("VALUE-000001-")) {
		t.Fatal("the deleted value is in no page before the compaction: the test proves nothing")
	}
	if err := os.WriteFile(path+CompactSuffix, []byte("leftover of a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := CompactFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.After <= 0 || res.Before <= 0 {
		t.Fatalf("sizes %+v", res)
	}
	if _, err := os.Stat(path + CompactSuffix); !os.IsNotExist(err) {
		t.Fatalf("leftover after compaction: %v", err)
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 200; i += 2 {
		if bytes.Contains(raw, fmt.Appendf(nil, "VALUE-%06d-", i)) {
			t.Fatalf("deleted value %d still in the file", i)
		}
	}
	db, err := bolt.Open(path, 0o600, boltOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		if n := b.Stats().KeyN; n != 100 {
			return fmt.Errorf("%d keys, want 100", n)
		}
		if v := b.Get([]byte("k000002")); !bytes.HasPrefix(v, []byte("VALUE-000002-")) {
			return fmt.Errorf("k000002 = %.20q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCompactFile: a 100,000-key file of 1 KiB values, half deleted,
// rewritten by CompactFile (sizes before and after reported).
func BenchmarkCompactFile(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "src.db")
	writeBolt(b, src, 100000, 1024)
	orig, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "p.db")
	var res FileCompaction
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res, err = CompactFile(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Before), "bytes-before")
	b.ReportMetric(float64(res.After), "bytes-after")
}
