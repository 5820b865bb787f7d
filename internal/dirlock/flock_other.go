//go:build !unix

package dirlock

import (
	"errors"
	"fmt"
	"os"
)

// tryLock fails: there is no flock here, and running unprotected is what
// the lock exists to prevent.
func tryLock(*os.File) (bool, error) {
	return false, fmt.Errorf("no flock on this system: %w", errors.ErrUnsupported)
}
