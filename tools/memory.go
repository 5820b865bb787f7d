package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The memory tools: memory_read, memory_write, memory_list, memory_search,
// memory_history, on the agent's own memory or a shared scope.

// scopeOf parses a scope argument (the schema has checked its shape):
// "agent" is e.Agent's private memory, "global" the global scope,
// "<kind>:<id>" any other. Whether the caller may reach it is the node's
// decision, never this one's.
func (e *Executor) scopeOf(s string) (client.Scope, error) {
	switch s {
	case "agent":
		if e.Agent == "" {
			return client.Scope{}, &Error{Code: 400, Field: "scope", Message: `"agent" names no memory: this server was started without an agent id`}
		}
		return client.Agent(e.Agent), nil
	case "global":
		return client.Global(), nil
	}
	kind, id, _ := strings.Cut(s, ":")
	return client.Scope{Kind: kind, ID: id}, nil
}

var memoryTypes = map[string]memoryv1.MemoryType{
	"semantic":   memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC,
	"episodic":   memoryv1.MemoryType_MEMORY_TYPE_EPISODIC,
	"procedural": memoryv1.MemoryType_MEMORY_TYPE_PROCEDURAL,
}

type entryResult struct {
	Scope string     `json:"scope"`
	Entry *entryView `json:"entry"`
}

func (e *Executor) memoryRead(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Scope   string `json:"scope"`
		Key     string `json:"key"`
		Version uint64 `json:"version"`
	}
	if err := decodeArgs(MemoryRead, raw, &a); err != nil {
		return nil, err
	}
	sc, err := e.scopeOf(a.Scope)
	if err != nil {
		return nil, err
	}
	ent, err := e.Client.GetEntry(ctx, sc, a.Key, a.Version)
	if err != nil {
		return nil, fromClient(err, "scope")
	}
	v, err := viewEntry(ent)
	return entryResult{a.Scope, v}, err
}

func (e *Executor) memoryWrite(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Scope           string   `json:"scope"`
		Key             string   `json:"key"`
		Value           string   `json:"value"`
		ContentType     string   `json:"content_type"`
		MemoryType      string   `json:"memory_type"`
		ExpectedVersion *int64   `json:"expected_version"`
		TTLSeconds      int64    `json:"ttl_seconds"`
		Importance      float64  `json:"importance"`
		Tags            []string `json:"tags"`
	}
	if err := decodeArgs(MemoryWrite, raw, &a); err != nil {
		return nil, err
	}
	sc, err := e.scopeOf(a.Scope)
	if err != nil {
		return nil, err
	}
	rep, err := e.Client.Put(ctx, sc, &memoryv1.PutEntryRequest{
		Key: a.Key, Value: []byte(a.Value), ContentType: a.ContentType, MemoryType: memoryTypes[a.MemoryType],
		ExpectedVersion: a.ExpectedVersion, TtlSeconds: a.TTLSeconds, Importance: a.Importance, Tags: a.Tags,
	})
	if err != nil {
		return nil, fromClient(err, "scope")
	}
	v, err := viewEntry(rep.GetEntry())
	return struct {
		entryResult
		Seq       uint64 `json:"seq"`
		Duplicate bool   `json:"duplicate"`
	}{entryResult{a.Scope, v}, rep.GetResult().GetSeq(), rep.GetResult().GetDuplicate()}, err
}

func (e *Executor) memoryList(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Scope          string   `json:"scope"`
		Prefix         string   `json:"prefix"`
		Limit          uint32   `json:"limit"`
		PageToken      string   `json:"page_token"`
		IncludeDeleted bool     `json:"include_deleted"`
		Tags           []string `json:"tags"`
	}
	if err := decodeArgs(MemoryList, raw, &a); err != nil {
		return nil, err
	}
	sc, err := e.scopeOf(a.Scope)
	if err != nil {
		return nil, err
	}
	rep, err := e.Client.ListEntries(ctx, sc, &memoryv1.ListEntriesRequest{
		Prefix: a.Prefix, Limit: a.Limit, PageToken: a.PageToken, IncludeDeleted: a.IncludeDeleted, Tags: a.Tags,
	})
	if err != nil {
		return nil, fromClient(err, "scope")
	}
	entries, err := viewEntries(rep.GetEntries())
	return struct {
		Scope         string       `json:"scope"`
		Entries       []*entryView `json:"entries"`
		NextPageToken string       `json:"next_page_token"`
	}{a.Scope, entries, rep.GetNextPageToken()}, err
}

func (e *Executor) memorySearch(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Scope string   `json:"scope"`
		Query string   `json:"query"`
		Limit uint32   `json:"limit"`
		Tags  []string `json:"tags"`
	}
	if err := decodeArgs(MemorySearch, raw, &a); err != nil {
		return nil, err
	}
	sc, err := e.scopeOf(a.Scope)
	if err != nil {
		return nil, err
	}
	rep, err := e.Client.SearchEntries(ctx, sc, &memoryv1.SearchEntriesRequest{Query: a.Query, Limit: a.Limit, Tags: a.Tags})
	if err != nil {
		return nil, fromClient(err, "scope")
	}
	type hit struct {
		Score float64    `json:"score"`
		Entry *entryView `json:"entry"`
	}
	hits := make([]hit, 0, len(rep.GetHits()))
	for _, h := range rep.GetHits() {
		v, err := viewEntry(h.GetEntry())
		if err != nil {
			return nil, err
		}
		hits = append(hits, hit{h.GetScore(), v})
	}
	return struct {
		Scope string `json:"scope"`
		Hits  []hit  `json:"hits"`
	}{a.Scope, hits}, nil
}

func (e *Executor) memoryHistory(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Scope string `json:"scope"`
		Key   string `json:"key"`
	}
	if err := decodeArgs(MemoryHistory, raw, &a); err != nil {
		return nil, err
	}
	sc, err := e.scopeOf(a.Scope)
	if err != nil {
		return nil, err
	}
	versions, err := e.Client.History(ctx, sc, a.Key)
	if err != nil {
		return nil, fromClient(err, "scope")
	}
	vs, err := viewEntries(versions)
	return struct {
		Scope    string       `json:"scope"`
		Key      string       `json:"key"`
		Versions []*entryView `json:"versions"`
	}{a.Scope, a.Key, vs}, err
}
