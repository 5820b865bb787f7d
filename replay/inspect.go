package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// InspectConfig selects a session and the point in the log to look at.
type InspectConfig struct {
	Conn
	SessionID string
	// AtSeq, when > 0, applies only the session's batches with stream
	// sequence <= AtSeq.
	AtSeq uint64
	// AtTime, when set, applies only the batches whose command time
	// (EventBatch.time_unix_nano, kept across export/import) is <= AtTime.
	AtTime time.Time
	// JSON prints {"context": ContextReply, "snapshot": SessionSnapshot} in
	// protojson instead of text.
	JSON bool
}

// Validate reports a bad configuration, wrapping ErrUsage.
func (c InspectConfig) Validate() error {
	if err := c.Conn.Validate(); err != nil {
		return err
	}
	if err := events.ValidateID("session id", c.SessionID); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if c.AtSeq > 0 && !c.AtTime.IsZero() {
		return fmt.Errorf("%w: --at-seq and --at-time exclude each other: give one", ErrUsage)
	}
	return nil
}

// Inspect rebuilds a session as it was at a point of the log (the latest by
// default) and writes its layers and the exact context an LLM was sent then.
// It replays the stored batches into a fresh segmented.State: no snapshot, no
// tokenizer, no summarizer, so what it shows is what the log says.
func Inspect(ctx context.Context, cfg InspectConfig, w io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l, err := cfg.dial()
	if err != nil {
		return err
	}
	defer l.close()
	sl, err := l.sessionLog(ctx, cfg.SessionID)
	if err != nil {
		return err
	}
	st, err := sessionAt(ctx, sl, cfg)
	if err != nil {
		return err
	}
	cx, err := contextOf(ctx, sl, st)
	if err != nil {
		return err
	}
	if cfg.JSON {
		return writeInspectJSON(w, st.State, cx)
	}
	return writeInspectText(w, st.State, cx, cfg)
}

// sessionLog is the log as one session's time travel reads it: the one
// stream, or with the log in K > 1 partitions the session's partition
// stream (its sequences are the ones --at-seq names).
type sessionLog struct {
	log events.Log
	// reader reads the removal ledger: the one stream, or for K > 1 every
	// partition's (actors.LedgerStreams; its own reads are the session's
	// partition's).
	reader events.StreamReader
	stream string // the stream holding the session
	l      *link
}

func (l *link) sessionLog(ctx context.Context, id string) (*sessionLog, error) {
	log, stream, err := l.aggregateLog(ctx, events.SessionSubject(id))
	if err != nil {
		return nil, err
	}
	sl := &sessionLog{log: log, stream: stream, l: l}
	switch lg := log.(type) {
	case *events.PartitionedLog:
		p, err := lg.PartitionOf(events.SessionSubject(id))
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		sl.reader = partitionLedgers{StreamReader: lg.Partition(p), plog: lg}
	case events.StreamReader:
		sl.reader = lg
	}
	return sl, nil
}

// checkWindow refuses a point before the session's stream's first kept
// sequence (ErrOutsideWindow): nothing of the log before it is left, so no
// state there can be rebuilt exactly.
func checkWindow(ctx context.Context, sl *sessionLog, cfg InspectConfig) error {
	if cfg.AtSeq == 0 && cfg.AtTime.IsZero() {
		return nil
	}
	info, err := sl.l.streamInfoOf(ctx, sl.stream)
	if err != nil {
		return err
	}
	st := info.State
	if st.FirstSeq <= 1 {
		return nil // the head was never removed
	}
	switch {
	case cfg.AtSeq > 0 && cfg.AtSeq < st.FirstSeq:
		return fmt.Errorf("%w: seq %d is before the first sequence stream %s keeps (%d): the events before it were compacted or erased away; the earliest point to inspect is --at-seq %d",
			ErrOutsideWindow, cfg.AtSeq, sl.stream, st.FirstSeq, st.FirstSeq)
	case !cfg.AtTime.IsZero() && st.Msgs > 0 && cfg.AtTime.Before(st.FirstTime):
		return fmt.Errorf("%w: %s is before the first message stream %s keeps (seq %d, %s): the events before it were compacted or erased away; the earliest point to inspect is --at-time %s",
			ErrOutsideWindow, cfg.AtTime.Format(time.RFC3339Nano), sl.stream, st.FirstSeq, st.FirstTime.UTC().Format(time.RFC3339Nano), st.FirstTime.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// sessionAt replays the session's batches up to the point cfg names
// (actors.SessionAt, the one time travel the inspector calls too).
func sessionAt(ctx context.Context, sl *sessionLog, cfg InspectConfig) (*actors.PastSession, error) {
	if err := checkWindow(ctx, sl, cfg); err != nil {
		return nil, err
	}
	st, err := actors.SessionAt(ctx, sl.log, events.NewCodec(), cfg.SessionID, actors.Point{Seq: cfg.AtSeq, Time: cfg.AtTime})
	var notYet *actors.NotYetError
	switch {
	case errors.As(err, &notYet) && notYet.First > 0 && cfg.AtSeq > 0:
		return nil, fmt.Errorf("%w: session %s did not exist yet at seq %d (its first batch is seq %d)", ErrNoSession, cfg.SessionID, cfg.AtSeq, notYet.First)
	case errors.As(err, &notYet) && notYet.First > 0:
		return nil, fmt.Errorf("%w: session %s did not exist yet at %s (its first batch is seq %d)", ErrNoSession, cfg.SessionID, cfg.AtTime.Format(time.RFC3339Nano), notYet.First)
	case errors.As(err, &notYet):
		return nil, fmt.Errorf("%w: session %s has no batch in stream %s", ErrNoSession, cfg.SessionID, sl.stream)
	case errors.Is(err, events.ErrNoStream):
		return nil, fmt.Errorf("%w: %s", ErrNoStream, sl.stream)
	case err != nil:
		return nil, fmt.Errorf("replay: %w", err)
	}
	return st, nil
}

// writeInspectJSON writes {"context": ..., "snapshot": ...}, both protojson.
func writeInspectJSON(w io.Writer, st *segmented.State, reply *memoryv1.ContextReply) error {
	mo := protojson.MarshalOptions{UseProtoNames: true}
	cx, err := mo.Marshal(reply)
	if err != nil {
		return fmt.Errorf("replay: encode context: %w", err)
	}
	snap, err := mo.Marshal(st.Snapshot())
	if err != nil {
		return fmt.Errorf("replay: encode snapshot: %w", err)
	}
	out, err := json.MarshalIndent(struct {
		Context  json.RawMessage `json:"context"`
		Snapshot json.RawMessage `json:"snapshot"`
	}{cx, snap}, "", "  ")
	if err != nil {
		return fmt.Errorf("replay: encode: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

// writeInspectText writes a readable report: the session, the layers'
// tokens, then every context message in order with its full content.
func writeInspectText(w io.Writer, st *segmented.State, cx *memoryv1.ContextReply, cfg InspectConfig) error {
	snap := st.Snapshot()
	var b strings.Builder
	point := "latest"
	switch {
	case cfg.AtSeq > 0:
		point = fmt.Sprintf("at seq <= %d", cfg.AtSeq)
	case !cfg.AtTime.IsZero():
		point = "at " + cfg.AtTime.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(&b, "session %s (%s): version %d, last batch seq %d, %s, status %s, turn %d, rom v%d\n",
		snap.GetSessionId(), point, snap.GetVersion(), snap.GetLastSeq(),
		time.Unix(0, snap.GetUpdatedUnixNano()).UTC().Format(time.RFC3339Nano),
		strings.TrimPrefix(snap.GetStatus().String(), "SESSION_STATUS_"), snap.GetTurn(), cx.GetRomVersion())
	u := cx.GetUsage()
	fmt.Fprintf(&b, "budget %d tokens, used %d (%.1f%%), %d messages in total, %d compressions\n",
		u.GetBudget(), u.GetUsed(), u.GetPercent(), snap.GetTotalMessages(), snap.GetCompressions())
	ly := cx.GetLayers()
	// The counts are of the messages listed below: the context as sent (a
	// plan may show fewer L1 and L2 entries than the session holds).
	listed := map[string]int{}
	for _, m := range cx.GetMessages() {
		listed[m.GetLayer()]++
	}
	fmt.Fprintf(&b, "layers: rom %d, kernel %d, memory %d (%d entries), l2 %d (%d summaries), recalled %d (%d), promoted %d (%d), l1 %d (%d entries)\n\n",
		ly.GetRom(), ly.GetKernel(), ly.GetMemory(), listed[segmented.LayerMemory], ly.GetL2(), listed[segmented.LayerL2],
		ly.GetRecalled(), listed[segmented.LayerRecalled], ly.GetPromoted(), listed[segmented.LayerPromoted], ly.GetL1(), listed[segmented.LayerL1])

	fmt.Fprintf(&b, "context sent to the LLM (%d messages):\n", len(cx.GetMessages()))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tlayer\trole\ttokens\tid\t")
	for i, m := range cx.GetMessages() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t\n", i+1, m.GetLayer(), roleName(m.GetRole()), m.GetTokens(), m.GetId())
	}
	_ = tw.Flush()
	for i, m := range cx.GetMessages() {
		fmt.Fprintf(&b, "\n--- %d %s %s (%d tokens) %s", i+1, m.GetLayer(), roleName(m.GetRole()), m.GetTokens(), m.GetId())
		if m.GetName() != "" {
			fmt.Fprintf(&b, " name=%s", m.GetName())
		}
		if m.GetToolCallId() != "" {
			fmt.Fprintf(&b, " tool_call_id=%s", m.GetToolCallId())
		}
		b.WriteString("\n")
		for _, tc := range m.GetToolCalls() {
			fmt.Fprintf(&b, "[tool call %s] %s(%s)\n", tc.GetId(), tc.GetName(), tc.GetArguments())
		}
		b.WriteString(m.GetContent())
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func roleName(r memoryv1.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}
