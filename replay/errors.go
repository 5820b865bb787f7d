package replay

import "errors"

// Sentinel errors. Test for them with errors.Is; the returned errors wrap
// them with the details (which flag, which session, which bucket).
var (
	// ErrUsage is returned when the command line is wrong: an unknown
	// subcommand, a missing or extra argument, flags that exclude each other.
	ErrUsage = errors.New("replay: usage")

	// ErrDiffers is returned by Verify when the live projection and the one
	// rebuilt from the log differ (cmd/replay exits 1).
	ErrDiffers = errors.New("replay: projection differs from the log")

	// ErrBehind is returned by Verify when the live projection is identical
	// to the log up to its checkpoint but the log goes further: it lags (a
	// node stopped or killed before its projector caught up), it is not
	// corrupt (cmd/replay exits 4).
	ErrBehind = errors.New("replay: projection is behind the log")

	// ErrNoSession is returned by Inspect when the stream holds no batch of
	// the session at or before the requested point.
	ErrNoSession = errors.New("replay: no such session")

	// ErrOutsideWindow is returned by Inspect when the point asked for
	// (--at-seq, --at-time) is before what the log still keeps: the stream's
	// first sequence moved past it (compacted or erased away), or the
	// session's own history starts later (its events before its compaction
	// baseline were removed). cmd/replay exits 5.
	ErrOutsideWindow = errors.New("replay: point outside the time-travel window")

	// ErrStreamNotEmpty is returned by Import when the target stream already
	// holds messages: an import only ever fills an empty stream.
	ErrStreamNotEmpty = errors.New("replay: stream is not empty")

	// ErrNoStream is returned when the stream does not exist (a wrong
	// --stream, or a --data-dir that is not a node's).
	ErrNoStream = errors.New("replay: stream not found")

	// ErrBadExport is returned by Import for a line that is not a valid
	// export record, or records out of stream order.
	ErrBadExport = errors.New("replay: bad export line")
)
