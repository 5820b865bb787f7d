package natsembed

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// startLogger is the server's logger: it passes every line to next (none
// when nil) and keeps the first Fatalf as an error instead of exiting.
// nats-server calls Fatalf when it cannot listen or cannot start JetStream,
// then carries on without that part; Start turns it into its error.
type startLogger struct {
	next server.Logger

	mu    sync.Mutex
	first error // guarded by mu: the first Fatalf
}

var _ server.Logger = (*startLogger)(nil)

// fatalError is a Fatalf line; it unwraps to the first error among the
// line's arguments (the listener's error, for instance).
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// fatal returns the first Fatalf, or nil.
func (l *startLogger) fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

func (l *startLogger) Fatalf(format string, v ...any) {
	e := &fatalError{msg: fmt.Sprintf(format, v...)}
	for _, a := range v {
		if err, ok := a.(error); ok {
			e.cause = err
			break
		}
	}
	l.mu.Lock()
	if l.first == nil {
		l.first = e
	}
	l.mu.Unlock()
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *startLogger) Noticef(format string, v ...any) {
	if l.next != nil {
		l.next.Noticef(format, v...)
	}
}

func (l *startLogger) Warnf(format string, v ...any) {
	if l.next != nil {
		l.next.Warnf(format, v...)
	}
}

func (l *startLogger) Errorf(format string, v ...any) {
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *startLogger) Debugf(format string, v ...any) {
	if l.next != nil {
		l.next.Debugf(format, v...)
	}
}

func (l *startLogger) Tracef(format string, v ...any) {
	if l.next != nil {
		l.next.Tracef(format, v...)
	}
}
