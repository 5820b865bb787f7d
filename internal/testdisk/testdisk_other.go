//go:build !linux

package testdisk

import "testing"

// Mount skips t: a tmpfs is mounted on Linux only.
func Mount(t testing.TB, size int, why string) string {
	t.Helper()
	t.Skipf("a tmpfs is mounted on Linux only: %s is not run here", why)
	return ""
}
