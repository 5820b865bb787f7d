package largedata

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Config configures a Store.
type Config struct {
	// Bucket is the JetStream object store bucket (default "MEM_DATA").
	Bucket string
	// Replicas is the bucket replication factor: 1 (embedded node) or 3.
	Replicas int
	// CompressThreshold: data of at least this many bytes is compressed
	// with zstd, and stored compressed only if that is smaller. A negative
	// value disables compression. Default 4 KiB.
	CompressThreshold int
	// MemoryBytes bounds the in-memory LRU tier (bytes of original data);
	// 0 disables the tier. Default 256 MiB.
	MemoryBytes int64
	// DefaultTTL is the lease of a Put without a ttl (default 7 days). Data
	// expires by its lease, never by reference counts.
	DefaultTTL time.Duration
	// MaxBytes is the largest accepted object, original size (default 64 MiB).
	// It bounds uploads too: data above one NATS message (max_payload) is
	// sent in parts (PutPart) and stored by Commit.
	MaxBytes int64
	// UploadTTL is how long a part of an upload is kept uncommitted: the
	// TTL of the uploads bucket (Bucket + "_UPLOADS"). Default 1 hour.
	UploadTTL time.Duration
	// SweepEvery is the period of the expiry sweep run by Run (default 1 min).
	SweepEvery time.Duration
	// Logger receives sweep failures in Run (nil: slog.Default()).
	Logger *slog.Logger
	// Holder, when set, keeps data that something still refers to past
	// its lease (see Holder). nil: data lives exactly its lease.
	Holder Holder
}

// DefaultConfig returns bucket MEM_DATA, one replica, compression from 4 KiB,
// a 256 MiB memory tier, a 7 day lease, 64 MiB objects, uploads kept 1 hour
// and a 1 minute sweep.
func DefaultConfig() Config {
	return Config{
		Bucket:            "MEM_DATA",
		Replicas:          1,
		CompressThreshold: 4 << 10,
		MemoryBytes:       256 << 20,
		DefaultTTL:        7 * 24 * time.Hour,
		MaxBytes:          64 << 20,
		UploadTTL:         time.Hour,
		SweepEvery:        time.Minute,
	}
}

// Validate reports the first problem of the configuration, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case !validBucket(c.Bucket):
		return fmt.Errorf("%w: Bucket: %q is not a valid bucket name ([A-Za-z0-9_-]+)", ErrInvalidConfig, c.Bucket)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("%w: Replicas: %d not in 1..5", ErrInvalidConfig, c.Replicas)
	case c.MemoryBytes < 0:
		return fmt.Errorf("%w: MemoryBytes: %d must be >= 0", ErrInvalidConfig, c.MemoryBytes)
	case c.DefaultTTL <= 0:
		return fmt.Errorf("%w: DefaultTTL: %v must be > 0", ErrInvalidConfig, c.DefaultTTL)
	case c.MaxBytes <= 0:
		return fmt.Errorf("%w: MaxBytes: %d must be > 0", ErrInvalidConfig, c.MaxBytes)
	case c.UploadTTL <= 0:
		return fmt.Errorf("%w: UploadTTL: %v must be > 0", ErrInvalidConfig, c.UploadTTL)
	case c.SweepEvery <= 0:
		return fmt.Errorf("%w: SweepEvery: %v must be > 0", ErrInvalidConfig, c.SweepEvery)
	}
	return nil
}

// uploadsSuffix names the uploads bucket after the data bucket.
const uploadsSuffix = "_UPLOADS"

// Holder says whether large data is still referred to. Sweep keeps a
// reference whose lease has ended while Held answers true, and Get and Ref
// serve it; once Held answers false (the referrer ended or forgot it), the
// next sweep expires it. Held is called only for references whose lease
// has ended. An error counts as held (keep, and ask again next sweep).
type Holder interface {
	Held(ctx context.Context, ref *memoryv1.DataReference) (bool, error)
}

func validBucket(b string) bool {
	if b == "" {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
