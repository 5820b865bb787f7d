package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The conversation tools: session_append, session_context,
// recall_conversation, search_conversation, clear_recalled_context.

type messageArg struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Name       string         `json:"name"`
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []toolCallView `json:"tool_calls"`
}

var roles = map[string]memoryv1.Role{
	"system": memoryv1.Role_ROLE_SYSTEM, "user": memoryv1.Role_ROLE_USER,
	"assistant": memoryv1.Role_ROLE_ASSISTANT, "tool": memoryv1.Role_ROLE_TOOL,
}

func (e *Executor) sessionAppend(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID        string       `json:"session_id"`
		Messages         []messageArg `json:"messages"`
		CreateIfMissing  *bool        `json:"create_if_missing"`
		SystemPrompt     string       `json:"system_prompt"`
		MaxContextTokens uint32       `json:"max_context_tokens"`
	}
	if err := decodeArgs(SessionAppend, raw, &a); err != nil {
		return nil, err
	}
	// One command id for both tries: the append after a create is the same
	// command, never a second one.
	req := &memoryv1.AppendRequest{CommandId: uuid.NewString()}
	for _, m := range a.Messages {
		in := &memoryv1.MessageInput{Role: roles[m.Role], Content: m.Content, Name: m.Name, ToolCallId: m.ToolCallID}
		for _, c := range m.ToolCalls {
			in.ToolCalls = append(in.ToolCalls, &memoryv1.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		req.Messages = append(req.Messages, in)
	}
	rep, err := e.Client.Append(ctx, a.SessionID, req)
	created := false
	if isMissingSession(err) && (a.CreateIfMissing == nil || *a.CreateIfMissing) {
		_, cerr := e.Client.CreateSession(ctx, a.SessionID, &memoryv1.CreateSessionRequest{
			AgentId: e.Agent, SystemPrompt: a.SystemPrompt, MaxContextTokens: a.MaxContextTokens,
		})
		if cerr != nil && client.Code(cerr) != 409 { // 409: created meanwhile by another call
			return nil, fromClient(cerr, "session_id")
		}
		created = cerr == nil
		rep, err = e.Client.Append(ctx, a.SessionID, req)
	}
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	return struct {
		SessionID    string    `json:"session_id"`
		Created      bool      `json:"created"`
		MessageIDs   []string  `json:"message_ids"`
		Tokens       []uint32  `json:"tokens"`
		Usage        usageView `json:"usage"`
		Compressions uint32    `json:"compressions"`
		Version      uint64    `json:"version"`
		Seq          uint64    `json:"seq"`
		Duplicate    bool      `json:"duplicate"`
	}{a.SessionID, created, nonNil(rep.GetMessageIds()), nonNil(rep.GetTokens()), viewUsage(rep.GetUsage()),
		rep.GetCompressions(), rep.GetResult().GetVersion(), rep.GetResult().GetSeq(), rep.GetResult().GetDuplicate()}, nil
}

// isMissingSession reports a 404 for the session id.
func isMissingSession(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Code == 404 && ce.Field == "session_id"
}

// nonNil is s, or an empty slice (so the JSON says [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// rendered is a chat API's messages as JSON, each as protojson with the
// .proto names and without empty fields (what the chat APIs expect).
func rendered[M proto.Message](msgs []M) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		out = append(out, b)
	}
	return out
}

func (e *Executor) sessionContext(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID string `json:"session_id"`
		Format    string `json:"format"`
	}
	if err := decodeArgs(SessionContext, raw, &a); err != nil {
		return nil, err
	}
	format := map[string]memoryv1.ContextFormat{
		"openai":    memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI,
		"anthropic": memoryv1.ContextFormat_CONTEXT_FORMAT_ANTHROPIC,
	}[a.Format]
	rep, err := e.Client.ContextAs(ctx, a.SessionID, format)
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	return viewContext(rep, a.Format)
}

// contextView is a session's context for the LLM: the layered messages,
// or with a format the chat API's messages (and Anthropic's system string).
type contextView struct {
	SessionID string    `json:"session_id"`
	Format    string    `json:"format"`
	Turn      uint32    `json:"turn"`
	Version   uint64    `json:"version"`
	Usage     usageView `json:"usage"`
	System    *string   `json:"system,omitempty"`
	Messages  any       `json:"messages"`
}

func viewContext(rep *memoryv1.ContextReply, format string) (*contextView, error) {
	v := &contextView{SessionID: rep.GetSessionId(), Format: format, Turn: rep.GetTurn(),
		Version: rep.GetVersion(), Usage: viewUsage(rep.GetUsage())}
	switch format {
	case "openai":
		v.Messages = rendered(rep.GetRendered().GetOpenai())
	case "anthropic":
		system := rep.GetRendered().GetSystem()
		v.System, v.Messages = &system, rendered(rep.GetRendered().GetAnthropic())
	default:
		v.Format = "layers"
		msgs := make([]messageView, 0, len(rep.GetMessages()))
		for _, m := range rep.GetMessages() {
			msgs = append(msgs, viewContextMessage(m))
		}
		v.Messages = msgs
	}
	return v, nil
}

func (e *Executor) recall(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID string `json:"session_id"`
		Offset    uint32 `json:"offset"`
		Limit     uint32 `json:"limit"`
	}
	if err := decodeArgs(RecallConversation, raw, &a); err != nil {
		return nil, err
	}
	rep, err := e.Client.Recall(ctx, a.SessionID, &memoryv1.RecallRequest{Offset: a.Offset, Limit: a.Limit})
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	msgs := make([]messageView, 0, len(rep.GetMessages()))
	for _, m := range rep.GetMessages() {
		msgs = append(msgs, viewMessage(m))
	}
	return struct {
		SessionID string        `json:"session_id"`
		Total     uint64        `json:"total"`
		Offset    uint32        `json:"offset"`
		Messages  []messageView `json:"messages"`
	}{a.SessionID, rep.GetTotal(), a.Offset, msgs}, nil
}

type hitView struct {
	SessionID string      `json:"session_id"`
	Score     float64     `json:"score"`
	Message   messageView `json:"message"`
}

type promotedView struct {
	MessageIDs     []string  `json:"message_ids"`
	PromotedTokens uint32    `json:"promoted_tokens"`
	Usage          usageView `json:"usage"`
}

func (e *Executor) search(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID string `json:"session_id"`
		Query     string `json:"query"`
		Limit     uint32 `json:"limit"`
		AcrossAll bool   `json:"across_user_sessions"`
		Promote   bool   `json:"promote"`
	}
	if err := decodeArgs(SearchConversation, raw, &a); err != nil {
		return nil, err
	}
	req := &memoryv1.SearchRequest{Query: a.Query, Limit: a.Limit, Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION}
	if a.AcrossAll {
		req.Scope = memoryv1.SearchScope_SEARCH_SCOPE_USER
	}
	rep, err := e.Client.Search(ctx, a.SessionID, req)
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	hits := make([]hitView, 0, len(rep.GetHits()))
	var own []string // hits of this session: the only ones it can promote
	for _, h := range rep.GetHits() {
		hits = append(hits, hitView{SessionID: h.GetSessionId(), Score: h.GetScore(), Message: viewMessage(h.GetMessage())})
		if h.GetSessionId() == a.SessionID {
			own = append(own, h.GetMessage().GetId())
		}
	}
	out := struct {
		SessionID string        `json:"session_id"`
		Hits      []hitView     `json:"hits"`
		Promoted  *promotedView `json:"promoted,omitempty"`
	}{SessionID: a.SessionID, Hits: hits}
	if a.Promote && len(own) > 0 {
		p, err := e.Client.Promote(ctx, a.SessionID, own...)
		if err != nil {
			return nil, fromClient(err, "session_id")
		}
		out.Promoted = &promotedView{MessageIDs: own, PromotedTokens: p.GetPromotedTokens(), Usage: viewUsage(p.GetUsage())}
	}
	return out, nil
}

func (e *Executor) clearRecalled(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID string `json:"session_id"`
	}
	if err := decodeArgs(ClearRecalledContext, raw, &a); err != nil {
		return nil, err
	}
	rep, err := e.Client.ClearRecalled(ctx, a.SessionID)
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	return struct {
		SessionID string    `json:"session_id"`
		Usage     usageView `json:"usage"`
		Version   uint64    `json:"version"`
		Seq       uint64    `json:"seq"`
	}{a.SessionID, viewUsage(rep.GetUsage()), rep.GetResult().GetVersion(), rep.GetResult().GetSeq()}, nil
}

func (e *Executor) consolidate(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		SessionID string `json:"session_id"`
		DryRun    bool   `json:"dry_run"`
	}
	if err := decodeArgs(MemoryConsolidate, raw, &a); err != nil {
		return nil, err
	}
	rep, err := e.Client.Consolidate(ctx, a.SessionID, a.DryRun)
	if err != nil {
		return nil, fromClient(err, "session_id")
	}
	type factView struct {
		Key        string  `json:"key"`
		Value      string  `json:"value"`
		Scope      string  `json:"scope,omitempty"`
		Confidence float64 `json:"confidence"`
		Correction bool    `json:"correction,omitempty"`
		Outcome    string  `json:"outcome"`
	}
	out := struct {
		SessionID string     `json:"session_id"`
		Extractor string     `json:"extractor"`
		Facts     []factView `json:"facts"`
		Digest    *factView  `json:"digest,omitempty"`
		// Done: the run finished (everything written, its marker last).
		Done    bool   `json:"done"`
		Written uint32 `json:"written"`
	}{SessionID: a.SessionID, Extractor: rep.GetExtractor(), Facts: []factView{}, Done: rep.GetDone(), Written: rep.GetWritten()}
	if d := rep.GetDigest(); d != nil {
		out.Digest = &factView{d.GetKey(), d.GetValue(), d.GetScope(), d.GetConfidence(), false, d.GetOutcome()}
	}
	for _, f := range rep.GetFacts() {
		out.Facts = append(out.Facts, factView{f.GetKey(), f.GetValue(), f.GetScope(), f.GetConfidence(), f.GetCorrection(), f.GetOutcome()})
	}
	return out, nil
}
