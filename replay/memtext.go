package replay

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// contextOf is st's context with its memory section's items filled from
// the scopes' events in the log (actors.ContextAt, which the inspector's
// time travel calls too): what the node sent then, an erased entry's item
// marked so. A log that cannot be opened or read is an error.
func contextOf(ctx context.Context, sl *sessionLog, st *actors.PastSession) (*memoryv1.ContextReply, error) {
	cx, err := actors.ContextAt(ctx, sl.log, sl.reader, events.NewCodec(), st)
	if err != nil {
		return nil, fmt.Errorf("replay: the memory items of session %s at seq %d: %w", st.Snapshot().GetSessionId(), st.LastSeq(), err)
	}
	return cx, nil
}
