package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FileName is the lock file's name inside the locked directory.
const FileName = "LOCK"

// ErrLocked is returned (wrapped in a *LockedError) by Acquire when another
// holder, in this process or another one, has the directory.
var ErrLocked = errors.New("dirlock: directory is locked")

// Holder describes the process holding a lock, as written in the lock file.
type Holder struct {
	// What holds the lock (e.g. "agentmem node", "replay rebuild").
	What  string    `json:"what,omitempty"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "another process (holder not recorded yet)"
	}
	s := fmt.Sprintf("pid %d on host %s since %s", h.PID, h.Host, h.Since.Format(time.RFC3339))
	if h.What != "" {
		s += " (" + h.What + ")"
	}
	return s
}

// LockedError is returned by Acquire when the directory is held. It matches
// errors.Is(err, ErrLocked).
type LockedError struct {
	Dir string
	// Holder is read from the lock file; zero if the holder had not written
	// it yet or it could not be read.
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("dirlock: data dir %s is in use by %s", e.Dir, e.Holder)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held directory lock. Close releases it.
type Lock struct {
	f     *os.File
	once  sync.Once
	close error
}

// Acquire creates dir if needed and locks it for this process without
// waiting; what says who holds it (written in the lock file for the error
// a second Acquire returns). The lock lasts until Close or the end of the
// process.
func Acquire(dir, what string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dirlock: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dirlock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dirlock: lock %s: %w", path, err)
	}
	if held {
		h := readHolder(f)
		f.Close()
		return nil, &LockedError{Dir: dir, Holder: h}
	}
	if err := writeHolder(f, what); err != nil {
		f.Close() // releases the lock
		return nil, fmt.Errorf("dirlock: write %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Close releases the lock. It is idempotent: later calls return the first
// call's result.
func (l *Lock) Close() error {
	l.once.Do(func() { l.close = l.f.Close() })
	return l.close
}

func writeHolder(f *os.File, what string) error {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	b, err := json.Marshal(Holder{What: what, PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(b, '\n'), 0)
	return err
}

// readHolder reads the holder from the lock file; zero if it is empty or
// not (yet) a complete record.
func readHolder(f *os.File) Holder {
	var h Holder
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	_ = json.Unmarshal(b[:n], &h)
	return h
}
