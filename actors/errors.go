package actors

import "errors"

var (
	// ErrUnavailable is returned when the log could not store or load a
	// command's events. For an append the outcome is unknown: the batch may
	// or may not be stored; retrying with the same command id is safe.
	ErrUnavailable = errors.New("actors: storage unavailable")
	// ErrIndexUnavailable is returned when a command id is not among the
	// aggregate's recent commands and the command index could not say
	// whether it was stored before (the projection is behind or stopped).
	// Nothing was stored; retrying with the same command id is safe.
	ErrIndexUnavailable = errors.New("actors: command index unavailable")
	// ErrClosed is returned when a command reaches a directory that is closing.
	ErrClosed = errors.New("actors: directory closed")
)
