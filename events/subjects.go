package events

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// SubjectLister is implemented by logs that can say which subjects they
// hold and how many messages each, without reading them: a directory of
// the aggregates (the inspector's scopes directory).
type SubjectLister interface {
	// SubjectCounts returns the messages held per subject matching filter,
	// a NATS subject filter ("mem.ev.workflow.*"). A subject whose
	// messages were all removed is absent.
	SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error)
}

var (
	_ SubjectLister = (*JetStreamLog)(nil)
	_ SubjectLister = (*MemLog)(nil)
)

// SubjectCounts implements SubjectLister with one stream info request
// (paged by the client past 100,000 subjects).
func (l *JetStreamLog) SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return nil, fmt.Errorf("events: stream %s: %w", l.stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(storedIn(l.part, filter)))
	if err != nil {
		return nil, fmt.Errorf("events: stream %s subjects %s: %w", l.stream, filter, err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for k, n := range info.State.Subjects {
		if n > 0 {
			out[logicalIn(l.part, k)] = n
		}
	}
	return out, nil
}

// SubjectCounts implements SubjectLister.
func (l *MemLog) SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]uint64{}
	for s, recs := range l.subjects {
		if len(recs) > 0 && natsMatch(filter, s) {
			out[s] = uint64(len(recs))
		}
	}
	return out, nil
}

// natsMatch reports whether subject matches a NATS filter ("*" one token,
// a final ">" one or more).
func natsMatch(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return i < len(s)
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}
