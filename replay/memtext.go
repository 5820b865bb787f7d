package replay

import (
	"context"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// contextOf is st's context with its memory section's texts read from the
// scopes' events in the log (the log keeps references, DESIGN §12): what
// the node sent then, or, for an entry erased since, nothing. It is
// actors.ContextAt, which the inspector's time travel calls too. A log that
// cannot be opened leaves the references without their texts.
func contextOf(ctx context.Context, l *link, st *segmented.State) *memoryv1.ContextReply {
	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = l.stream
	log, err := events.OpenJetStreamLog(l.js, lcfg)
	if err != nil {
		return segmented.HydrateMemory(st.Context(), func(string, string, uint64) (string, bool) { return "", false })
	}
	return actors.ContextAt(ctx, log, events.NewCodec(), st)
}
