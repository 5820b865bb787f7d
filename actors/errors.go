package actors

import "errors"

var (
	// ErrUnavailable is returned when the log could not store or load a
	// command's events. For an append the outcome is unknown: the batch may
	// or may not be stored; retrying with the same command id is safe.
	ErrUnavailable = errors.New("actors: storage unavailable")
	// ErrClosed is returned when a command reaches a directory that is closing.
	ErrClosed = errors.New("actors: directory closed")
)
