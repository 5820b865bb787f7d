// Package dirlock gives one process at a time a data directory.
//
// Acquire takes an exclusive flock(2) on <dir>/LOCK without waiting. The
// kernel holds the lock for the open file: it is released by Close, and by
// the kernel when the process exits or is killed (kill -9 included), so a
// crash never leaves a directory locked. A second Acquire, from another
// process or from this one (flock locks belong to the open file, not to the
// process), fails at once with a *LockedError naming the holder.
//
// # File format
//
// After taking the lock the holder truncates LOCK and writes one JSON object
// (pid, host, start time, what holds it), read back only to describe the
// holder in the error of a refused Acquire. The content is informative: the
// flock is the lock. Close leaves the file in place: removing it would let a
// process that opened it just before the removal lock a file no longer
// reachable by name while a third one locks a new file of the same name.
//
// # Platforms
//
// Unix systems only (flock). On other systems Acquire fails with an error
// wrapping errors.ErrUnsupported rather than run unprotected.
package dirlock
