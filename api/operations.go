package api

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// operation is one operation of the API, declared once, in operations:
// Start registers its NATS endpoint from it, the HTTP API serves it at its
// subject after mem.v1 with / for . (POST /v1/session/{session_id}/append),
// the OpenAPI document is generated from it (with the field rules of
// httpapi/contract.go), and the SDKs' types from the document. Adding an operation
// is adding a row here and writing its handler.
type operation struct {
	// name is the endpoint's name and the document's operationId.
	name string
	// subject is the NATS subject; each * is an id (its HTTP path
	// parameter is named by the token before it: session_id, agent_id,
	// kind and scope_id under scope).
	subject string
	// request and reply are the messages the operation reads and answers
	// (JSON: their protojson). eraseReply is the reply instead when the
	// request has erase: true.
	request, reply, eraseReply proto.Message
	// summary and desc describe it in the document.
	summary, desc string
	// access is who may call it: Run checks it (access.go) and
	// the document says it.
	access access
	// needs is what the node must be given to serve it (without it the
	// operation is not served).
	needs need
	// kinds are the scope kinds it is served on (nil: every kind).
	kinds []string
	// serve is its handler.
	serve func(s *Service) func(*call)
}

// need is a dependency of an operation (Deps).
type need uint8

const (
	needNothing      need = iota
	needScopes            // Deps.Scopes: agent and scope memory
	needData              // Deps.Data: large data
	needWatcher           // Deps.Watcher: a session watch
	needScopeWatcher      // Deps.Watcher and Deps.Scopes: an agent or scope watch
)

// serves reports whether the service has what n needs.
func (s *Service) serves(n need) bool {
	switch n {
	case needScopes:
		return s.scopes != nil
	case needData:
		return s.data != nil
	case needWatcher:
		return s.watcher != nil
	case needScopeWatcher:
		return s.watcher != nil && s.scopes != nil
	}
	return true
}

// onSession builds the handler of a session command (sessionHandler).
func onSession(req proto.Message) func(*Service) func(*call) {
	return func(s *Service) func(*call) {
		return s.sessionHandler(func() proto.Message { return req.ProtoReflect().New().Interface() })
	}
}

// onQuery builds the handler of a session query (queryHandler).
func onQuery(op string, req proto.Message, serve queryFunc) func(*Service) func(*call) {
	return func(s *Service) func(*call) {
		return s.queryHandler(queryEndpoint{op: op, newReq: func() proto.Message { return req.ProtoReflect().New().Interface() }, serve: serve})
	}
}

// onEntry builds the handler of an entry operation of an agent or a scope.
func onEntry(op string) func(*Service) func(*call) {
	return func(s *Service) func(*call) { return s.entryHandler(op) }
}

// method builds the handler that is a method of the service.
func method(h func(*Service, *call)) func(*Service) func(*call) {
	return func(s *Service) func(*call) { return func(c *call) { h(s, c) } }
}

// operations is every operation of the API.
var operations = []operation{
	{name: "session_create", subject: "mem.v1.session.*.create", request: &memoryv1.CreateSessionRequest{}, reply: &memoryv1.CreateSessionReply{},
		summary: "Create a session", desc: "Starts a conversation with its system prompt, budget and owner. Retrying with the same command_id answers the first reply.",
		access: access{check: checkByActor, text: "any caller, for its own agent (an admin for any); a caller's sessions are bounded (413 max_sessions)"}, serve: onSession(&memoryv1.CreateSessionRequest{})},
	{name: "session_append", subject: "mem.v1.session.*.append", request: &memoryv1.AppendRequest{}, reply: &memoryv1.AppendReply{},
		summary: "Append messages", desc: "Stores a turn's messages (a user message, an assistant reply with tool calls, tool results) as one write, compressing the context if the budget needs it.",
		access: bySessionActorW, serve: onSession(&memoryv1.AppendRequest{})},
	{name: "session_context", subject: "mem.v1.session.*.context", request: &memoryv1.ContextRequest{}, reply: &memoryv1.ContextReply{},
		summary: "Read the context", desc: "The context to send to the model, within the budget: layered messages, and with format the exact messages array of a chat API.",
		access: bySessionActor, serve: onSession(&memoryv1.ContextRequest{})},
	{name: "session_get", subject: "mem.v1.session.*.get", request: &memoryv1.GetSessionRequest{}, reply: &memoryv1.GetSessionReply{},
		summary: "Read a session", desc: "The session's owner, status, counters and budget usage.",
		access: bySessionActor, serve: onSession(&memoryv1.GetSessionRequest{})},
	{name: "session_kernel", subject: "mem.v1.session.*.kernel", request: &memoryv1.KernelRequest{}, reply: &memoryv1.KernelReply{},
		summary: "Change or read the Kernel", desc: "Defines or removes a tool, caches a schema, sets or deletes a fact, or stages a new ROM (system prompt); with no operation it reads the Kernel.",
		access: bySessionActorW, serve: onSession(&memoryv1.KernelRequest{})},
	{name: "session_state", subject: "mem.v1.session.*.state", request: &memoryv1.StateRequest{}, reply: &memoryv1.StateReply{},
		summary: "Read or write session state", desc: "A key-value store for the session: temp:<name> for this turn, session:<name> until it ends.",
		access: bySessionActorW, serve: onSession(&memoryv1.StateRequest{})},
	{name: "session_status", subject: "mem.v1.session.*.status", request: &memoryv1.StatusRequest{}, reply: &memoryv1.StatusReply{},
		summary: "Pause, resume, terminate or archive", desc: "Changes the session's status; terminating consolidates its facts into long-term memory.",
		access: bySessionActorW, serve: onSession(&memoryv1.StatusRequest{})},
	{name: "session_recall", subject: "mem.v1.session.*.recall", request: &memoryv1.RecallRequest{}, reply: &memoryv1.RecallReply{},
		summary: "Page through the stored messages", desc: "Every message of the session, oldest first, including those compressed out of the context.",
		access: sessionIndex, serve: onQuery("recall", &memoryv1.RecallRequest{}, (*Service).recall)},
	{name: "session_search", subject: "mem.v1.session.*.search", request: &memoryv1.SearchRequest{}, reply: &memoryv1.SearchReply{},
		summary: "Search the conversation", desc: "BM25 search over the session's stored messages (or every session of its user).",
		access: access{check: checkSessionIndex, text: accessSession + "; scope user also needs the user's scope"}, serve: onQuery("search", &memoryv1.SearchRequest{}, (*Service).search)},
	{name: "session_promote", subject: "mem.v1.session.*.promote", request: &memoryv1.PromoteRequest{}, reply: &memoryv1.PromoteReply{},
		summary: "Promote messages into the context", desc: "Brings stored messages back into the context (after a search or recall).",
		access: sessionIndexW, serve: onQuery("promote", &memoryv1.PromoteRequest{}, (*Service).promote)},
	{name: "session_clear_recalled", subject: "mem.v1.session.*.clear_recalled", request: &memoryv1.ClearRecalledRequest{}, reply: &memoryv1.ClearRecalledReply{},
		summary: "Clear promoted messages", desc: "Removes the promoted and recalled messages from the context.",
		access: bySessionActorW, serve: onQuery("clear_recalled", &memoryv1.ClearRecalledRequest{}, (*Service).clearRecalled)},
	{name: "session_consolidate", subject: "mem.v1.session.*.consolidate", request: &memoryv1.ConsolidateRequest{}, reply: &memoryv1.ConsolidateReply{},
		summary: "Consolidate facts now", desc: "Extracts the facts the user stated into their long-term memory (dry_run: report only).",
		access: sessionOwnerW, serve: onQuery("consolidate", &memoryv1.ConsolidateRequest{}, (*Service).consolidateEndpoint)},
	{name: "session_watch", subject: "mem.v1.session.*.watch", request: &memoryv1.WatchRequest{}, reply: &memoryv1.WatchReply{},
		summary: "Long-poll the session's changes", desc: "The changes stored after from_seq, as soon as there is one.",
		access: access{check: checkSession, text: accessSession + "; each caller's watches in flight are bounded (429 max_watches)"}, needs: needWatcher, serve: method((*Service).watchHandler)},
	{name: "session_erase", subject: "mem.v1.session.*.erase", request: &memoryv1.EraseRequest{}, reply: &memoryv1.EraseReceipt{},
		summary: "Erase a session", desc: "Removes the session and what came from it from the log and every read model.",
		access: sessionOwnerW, serve: method((*Service).eraseSession)},
	{name: "sessions_list", subject: "mem.v1.sessions.list", request: &memoryv1.ListSessionsRequest{}, reply: &memoryv1.ListSessionsReply{},
		summary: "List sessions", desc: "The sessions index, by user, agent or status.",
		access: access{check: checkBody, text: "an admin; any other caller names user_id (one of its users) or agent_id (its own agent)"}, serve: method((*Service).listSessions)},
	{name: "tools_list", subject: "mem.v1.tools.list", request: &memoryv1.ToolsRequest{}, reply: &memoryv1.ToolsReply{},
		summary: "List the memory tools", desc: "The tools an LLM calls to use its memory, as a chat API takes them.",
		access: access{check: checkNone, text: accessAnyone}, serve: method((*Service).toolsList)},
	{name: "user_erase", subject: "mem.v1.user.*.erase", request: &memoryv1.EraseRequest{}, reply: &memoryv1.EraseReceipt{},
		summary: "Erase a user", desc: "Removes everything the user said and everything learned from it.",
		access: access{check: checkUser, write: true, text: accessEraseUser}, serve: method((*Service).eraseUser)},
	{name: "data_put", subject: "mem.v1.data.put", request: &memoryv1.PutDataRequest{}, reply: &memoryv1.PutDataReply{},
		summary: "Store large data", desc: "Stores bytes beside the log and answers a reference to attach to a message.",
		access: access{check: checkDataWrite, write: true, text: "a caller that may write data (not a read-only principal); what it holds is bounded (413 max_data_bytes)"}, needs: needData, serve: method((*Service).dataPut)},
	{name: "data_upload", subject: "mem.v1.data.upload", request: &memoryv1.UploadDataRequest{}, reply: &memoryv1.UploadDataReply{},
		summary: "Upload a chunk of large data", desc: "Sends the bytes of a data/put that announced its size, in order.",
		access: access{check: checkDataWrite, write: true, text: "a caller that may write data, continuing its own upload"}, needs: needData, serve: method((*Service).dataUpload)},
	{name: "data_get", subject: "mem.v1.data.get", request: &memoryv1.GetDataRequest{}, reply: &memoryv1.GetDataReply{},
		summary: "Read large data", desc: "Reads stored bytes by reference, whole or a range.",
		access: access{check: checkBody, text: accessData}, needs: needData, serve: method((*Service).dataGet)},
	{name: "scope_resolve", subject: "mem.v1.scope.*.*.resolve", request: &memoryv1.ResolveRequest{}, reply: &memoryv1.ResolveReply{},
		summary: "Resolve a key across scopes", desc: "The entry of a key from the first scope that has it, in the context assembler's order: the session's temp state, agent, agent_type, session, user, project, app, global.",
		access: access{check: checkByActor, text: accessSession + "; each scope is read as the caller may"}, needs: needScopes, kinds: []string{"session"}, serve: method((*Service).resolveHandler)},
	{name: "scope_publish", subject: "mem.v1.scope.*.*.publish", request: &memoryv1.PublishRequest{}, reply: &memoryv1.EntryReply{},
		summary: "Publish an entry to another scope", desc: "Copies an entry's latest value from the session's scope into its user's or project's.",
		access: access{check: checkSession, text: accessSession + " and may write the target scope"}, needs: needScopes, kinds: []string{"session"}, serve: method((*Service).publishHandler)},
	{name: "scope_conflicts", subject: "mem.v1.scope.*.*.conflicts", request: &memoryv1.ConflictsRequest{}, reply: &memoryv1.ConflictsReply{},
		summary: "List conflicts", desc: "Facts consolidation could not settle in a scope whose conflict_strategy is review.",
		access: scopeReader, needs: needScopes, serve: method((*Service).conflictsHandler)},
	{name: "scope_settle", subject: "mem.v1.scope.*.*.settle", request: &memoryv1.SettleConflictRequest{}, reply: &memoryv1.EntryReply{},
		summary: "Settle a conflict", desc: "Accepts or drops a proposed value.",
		access: scopeWriter, needs: needScopes, serve: method((*Service).settleHandler)},
}

func init() {
	// The agent's memory and the shared scopes take the same operations:
	// mem.v1.agent.<id>.<op> and mem.v1.scope.<kind>.<id>.<op>.
	for _, e := range []struct {
		op             string
		request, reply proto.Message
		summary, desc  string
		write          bool
		needs          need
		serve          func(*Service) func(*call)
	}{
		{"put", &memoryv1.PutEntryRequest{}, &memoryv1.EntryReply{}, "Write an entry", "Writes a new version of a key in %s.", true, needScopes, onEntry("put")},
		{"get", &memoryv1.GetEntryRequest{}, &memoryv1.EntryReply{}, "Read an entry", "The latest version of a key in %s (or a given version).", false, needScopes, onEntry("get")},
		{"delete", &memoryv1.DeleteEntryRequest{}, &memoryv1.EntryReply{}, "Delete an entry", "Writes a tombstone in %s (erase: true removes every version from the log).", true, needScopes, onEntry("delete")},
		{"rollback", &memoryv1.RollbackEntryRequest{}, &memoryv1.EntryReply{}, "Roll an entry back", "Makes an older version of a key in %s the latest.", true, needScopes, onEntry("rollback")},
		{"list", &memoryv1.ListEntriesRequest{}, &memoryv1.ListEntriesReply{}, "List entries", "The live entries of %s, by key prefix, memory type or tags.", false, needScopes, onEntry("list")},
		{"history", &memoryv1.HistoryRequest{}, &memoryv1.HistoryReply{}, "Read an entry's history", "Every version of a key in %s, oldest first.", false, needScopes, onEntry("history")},
		{"configure", &memoryv1.ConfigureScopeRequest{}, &memoryv1.ConfigureScopeReply{}, "Configure memory", "Bounds %s (max entries, episodic TTL) and sets its conflict strategy.", true, needScopes, onEntry("configure")},
		{"search", &memoryv1.SearchEntriesRequest{}, &memoryv1.SearchEntriesReply{}, "Search memory", "BM25 search over the entries of %s.", false, needScopes, method((*Service).entrySearchHandler)},
		{"watch", &memoryv1.WatchRequest{}, &memoryv1.WatchReply{}, "Long-poll the changes", "The changes of %s stored after from_seq, as soon as there is one.", false, needScopeWatcher, method((*Service).watchHandler)},
		{"erase", &memoryv1.EraseRequest{}, &memoryv1.EraseReceipt{}, "Erase", "Removes %s and what came from it from the log.", true, needScopes, method((*Service).eraseScope)},
		{"archive", &memoryv1.ArchiveEntriesRequest{}, &memoryv1.ArchiveEntriesReply{}, "Archive old entries", "Archives the live entries of a memory type (episodic by default) of %s last updated older_than_days ago or more: tombstones that keep their values, out of reads, search and contexts, restorable (dry_run: report only). At most 1000 per call (more: call again).", true, needScopes, onEntry("archive")},
		{"restore", &memoryv1.RestoreEntryRequest{}, &memoryv1.EntryReply{}, "Restore an entry", "Brings back an archived or deleted entry of %s: its archived value, or its newest live version (or version), as a new version.", true, needScopes, onEntry("restore")},
		{"export", &memoryv1.ExportEntriesRequest{}, &memoryv1.ExportEntriesReply{}, "Export the entries", "A page of the keys of %s with every kept version and its metadata, archived and deleted ones included (at most 200 keys and 4 MiB of values a page).", false, needScopes, onEntry("export")},
		{"import", &memoryv1.ImportEntriesRequest{}, &memoryv1.ImportEntriesReply{}, "Import entries", "Writes the entries of an export (the newest version of each key) into %s: a key holding the same content is unchanged, so an import applied twice changes nothing (dry_run: report what would change). At most 500 keys a request.", true, needScopes, onEntry("import")},
	} {
		for _, k := range []struct{ prefix, subject, where string }{
			{"agent", "mem.v1.agent.*.", "the agent's memory"},
			{"scope", "mem.v1.scope.*.*.", "the scope"},
		} {
			who := scopeReader
			if e.write {
				who = scopeWriter
			}
			switch {
			case e.op == "configure" && k.prefix == "agent":
				who = access{check: checkConfigure, write: true, text: "the agent itself (its principal) or an admin"}
			case e.op == "configure":
				who = access{check: checkConfigure, write: true, text: "an admin (a configuration applies to every member's entries)"}
			case e.op == "erase" && k.prefix == "agent":
				who = access{check: checkErase, write: true, text: "the agent itself (its principal) or an admin"}
			case e.op == "erase":
				who = access{check: checkErase, write: true, text: "an admin; a user's scope also its user's principal, a session's scope a caller that may change the session"}
			case e.op == "export":
				who = access{check: checkOwner, text: accessOwner}
			case e.op == "import" || e.op == "archive":
				who = access{check: checkOwner, write: true, text: accessOwnerW}
			}
			op := operation{name: k.prefix + "_" + e.op, subject: k.subject + e.op, request: e.request, reply: e.reply,
				summary: e.summary, desc: fmt.Sprintf(e.desc, k.where), access: who, needs: e.needs, serve: e.serve}
			if e.op == "delete" {
				op.eraseReply = &memoryv1.EraseReceipt{}
			}
			operations = append(operations, op)
		}
	}
}

// Operation is an operation as a transport adapter sees it: what it reads
// and answers, how it is described, who may call it (package httpapi
// serves and documents each over HTTP).
type Operation struct {
	Name, Subject string
	// Request and Reply are the messages it reads and answers; EraseReply
	// is the reply to a request with erase: true (nil: none).
	Request, Reply, EraseReply   proto.Message
	Summary, Description, Access string
	// Kinds are the scope kinds it is served on (nil: every kind).
	Kinds []string
}

// Operations are the operations this service serves, in the table's order.
func (s *Service) Operations() []Operation {
	var out []Operation
	for _, op := range operations {
		if s.serves(op.needs) {
			out = append(out, Operation{Name: op.name, Subject: op.subject, Request: op.request, Reply: op.reply,
				EraseReply: op.eraseReply, Summary: op.summary, Description: op.desc, Access: op.access.text, Kinds: op.kinds})
		}
	}
	return out
}

// Tenants is the tenants directory (nil: the single-user node).
func (s *Service) Tenants() *tenancy.Directory { return s.tenants }

// Denied counts a request a transport refused before it reached an
// operation (family: identity, origin), as the service counts its own
// refusals.
func (s *Service) Denied(family string) { s.metrics.Denied.WithLabelValues(family).Inc() }

// Stopping is closed when the service stops: the watch polls in flight
// answer at once, and a stream of them should end.
func (s *Service) Stopping() <-chan struct{} { return s.watchCtx.Done() }

// Version is the service's version.
func (s *Service) Version() string { return s.cfg.Version }
