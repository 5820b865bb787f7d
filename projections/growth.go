package projections

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// growStep is the most the projection file grows by beyond what a commit
// needs. bbolt's default (16 MiB, always taken once the mapping is larger
// than that, which InitialMmapSize makes it from the start) reserves that
// much at each growth: on a small disk, or where a hole in the file takes
// space once touched (tmpfs pages mapped shared), one growth step took
// the space an operator had just freed.
const growStep = 1 << 20

// ErrNoRoom is returned (wrapped) by a write that would grow the
// projection file past the room its RoomFunc leaves: nothing was written;
// the projector retries it once the disk has room again.
var ErrNoRoom = errors.New("projections: no room on the disk to grow the projection file")

// RoomFunc returns how many more bytes the projection file may take from
// its disk (the free space less what must stay free); negative: no limit.
type RoomFunc func() int64

// SetRoom bounds the growth of the file by room, asked before each write
// transaction (nil: no bound). Call before the projector runs.
func (s *Store) SetRoom(room RoomFunc) { s.room = room }

// limitGrowth sets the bounds of the write transaction tx's growth: the
// file may grow by growStep beyond what it needs, by less when the room is
// smaller, and to at most its size plus the room. Runs inside the
// transaction (bbolt's writer lock): the fields it sets are read only by
// the writer.
func (s *Store) limitGrowth(tx *bolt.Tx) {
	db := tx.DB()
	db.AllocSize, db.MaxSize = s.step, s.maxSize
	if s.room == nil {
		return
	}
	room := s.room()
	if room < 0 {
		return
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return
	}
	// What the file takes on the disk: a hole (a growth step not written
	// yet) takes space as it is written, so it counts against the room.
	used := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		used = min(used, st.Blocks*512)
	}
	if room < 2*growStep {
		db.AllocSize = 0 // grow by what a commit needs, no more
	}
	limit := int(max(used, tx.Size()) + room)
	if s.maxSize > 0 {
		limit = min(limit, s.maxSize)
	}
	db.MaxSize = limit
}

// noRoom wraps bbolt's size limit as ErrNoRoom.
func noRoom(err error) error {
	if errors.Is(err, berrors.ErrMaxSizeReached) {
		return fmt.Errorf("%w: %w", ErrNoRoom, err)
	}
	return err
}
