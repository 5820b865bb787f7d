// Package testdisk gives tests a real small file system: a tmpfs of a
// chosen size, mounted on a temporary directory and unmounted at cleanup,
// for the full-disk tests of the node and the projections. Mounting needs
// root (CI runs as root); elsewhere the test is skipped with the reason.
package testdisk
