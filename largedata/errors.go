package largedata

import "errors"

// Sentinel errors. Test for them with errors.Is; the returned errors wrap
// them with the id and the details.
var (
	// ErrNotFound is returned when no object with the id is stored (never
	// stored, swept after its lease, or the id is malformed).
	ErrNotFound = errors.New("largedata: not found")

	// ErrCorrupt is returned when the bytes read from the durable tier do not
	// hash to the reference's sha256 (or cannot be decompressed, or the
	// object's reference metadata cannot be decoded). The bytes are never
	// returned with it.
	ErrCorrupt = errors.New("largedata: corrupt data")

	// ErrTooLarge is returned by Put when the data is larger than
	// Config.MaxBytes, or its metadata does not fit in an object header.
	ErrTooLarge = errors.New("largedata: data too large")

	// ErrExpired is returned when the reference's lease has ended
	// (expires_unix_nano <= now) even if a sweep has not deleted it yet.
	ErrExpired = errors.New("largedata: data expired")

	// ErrUploadNotFound is returned when an upload has no parts (never
	// sent, committed and cleaned up without a marker, or expired after
	// Config.UploadTTL), or its parts belong to another owner.
	ErrUploadNotFound = errors.New("largedata: upload not found")

	// ErrInvalidConfig is returned (wrapped) by Config.Validate.
	ErrInvalidConfig = errors.New("largedata: invalid config")

	// ErrInvalidArgument is returned when a call argument is out of range
	// (a negative ttl).
	ErrInvalidArgument = errors.New("largedata: invalid argument")
)
