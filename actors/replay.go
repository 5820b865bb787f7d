package actors

import (
	"fmt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
)

type eventsRecord = events.Record

// replayRecord applies one stored batch to state. Versions must follow each
// other: a gap or a repeat means the log and the state disagree.
func replayRecord(codec *events.Codec, state *segmented.State, rec events.Record) error {
	batch, err := events.DecodeBatch(rec.Data)
	if err != nil {
		return fmt.Errorf("seq %d: %w", rec.Seq, err)
	}
	if want := state.Version() + 1; batch.GetVersion() != want {
		return fmt.Errorf("seq %d: batch version %d, want %d", rec.Seq, batch.GetVersion(), want)
	}
	evs, err := codec.Unpack(batch)
	if err != nil {
		return fmt.Errorf("seq %d: %w", rec.Seq, err)
	}
	meta := segmented.Meta{CommandID: batch.GetCommandId(), Version: batch.GetVersion(), Seq: rec.Seq, TimeUnixNano: batch.GetTimeUnixNano()}
	if err := state.Apply(meta, evs); err != nil {
		return fmt.Errorf("seq %d: apply: %w", rec.Seq, err)
	}
	return nil
}

// Replay rebuilds a session's state from a sequence of stored records (used
// by tests and by the replay tool).
func Replay(codec *events.Codec, state *segmented.State, recs []events.Record) error {
	for _, rec := range recs {
		if err := replayRecord(codec, state, rec); err != nil {
			return err
		}
	}
	return nil
}
