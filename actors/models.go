package actors

import (
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sessionModel adapts segmented.State to the pipeline.
type sessionModel struct{ *segmented.State }

func (m sessionModel) apply(cmd string, digest []byte, version, seq uint64, t int64, evs []proto.Message) error {
	return m.State.Apply(segmented.Meta{CommandID: cmd, Digest: digest, Version: version, Seq: seq, TimeUnixNano: t}, evs)
}

func (m sessionModel) marshal() ([]byte, error) { return m.State.MarshalSnapshot(deterministic) }

var sessionKind = modelKind{
	kind:  events.KindSession,
	empty: func(string) model { return sessionModel{segmented.New()} },
	restore: func(data []byte) (model, error) {
		snap := &memoryv1.SessionSnapshot{}
		if err := proto.Unmarshal(data, snap); err != nil {
			return nil, err
		}
		return sessionModel{segmented.FromOwnedSnapshot(snap)}, nil
	},
}

// Replay rebuilds a session's state from a sequence of stored records (used
// by tests and by the replay tool).
func Replay(codec *events.Codec, state *segmented.State, recs []events.Record) error {
	m := sessionModel{state}
	for _, rec := range recs {
		if _, _, err := replayRecord(codec, m, rec); err != nil {
			return err
		}
	}
	return nil
}
