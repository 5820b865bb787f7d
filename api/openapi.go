package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// opTypes are the request and reply messages of each endpoint, by the name
// it is registered under (Start's add). An endpoint missing here is untyped
// ("object") in the document, and node.TestOpenAPIMatchesServedRoutes fails.
var opTypes = map[string][2]proto.Message{
	"session_create":         {&memoryv1.CreateSessionRequest{}, &memoryv1.CreateSessionReply{}},
	"session_append":         {&memoryv1.AppendRequest{}, &memoryv1.AppendReply{}},
	"session_context":        {&memoryv1.ContextRequest{}, &memoryv1.ContextReply{}},
	"session_get":            {&memoryv1.GetSessionRequest{}, &memoryv1.GetSessionReply{}},
	"session_kernel":         {&memoryv1.KernelRequest{}, &memoryv1.KernelReply{}},
	"session_state":          {&memoryv1.StateRequest{}, &memoryv1.StateReply{}},
	"session_status":         {&memoryv1.StatusRequest{}, &memoryv1.StatusReply{}},
	"session_recall":         {&memoryv1.RecallRequest{}, &memoryv1.RecallReply{}},
	"session_search":         {&memoryv1.SearchRequest{}, &memoryv1.SearchReply{}},
	"session_promote":        {&memoryv1.PromoteRequest{}, &memoryv1.PromoteReply{}},
	"session_clear_recalled": {&memoryv1.ClearRecalledRequest{}, &memoryv1.ClearRecalledReply{}},
	"session_consolidate":    {&memoryv1.ConsolidateRequest{}, &memoryv1.ConsolidateReply{}},
	"sessions_list":          {&memoryv1.ListSessionsRequest{}, &memoryv1.ListSessionsReply{}},
	"tools_list":             {&memoryv1.ToolsRequest{}, &memoryv1.ToolsReply{}},
	"session_watch":          {&memoryv1.WatchRequest{}, &memoryv1.WatchReply{}},
	"agent_watch":            {&memoryv1.WatchRequest{}, &memoryv1.WatchReply{}},
	"scope_watch":            {&memoryv1.WatchRequest{}, &memoryv1.WatchReply{}},
	"data_put":               {&memoryv1.PutDataRequest{}, &memoryv1.PutDataReply{}},
	"data_upload":            {&memoryv1.UploadDataRequest{}, &memoryv1.UploadDataReply{}},
	"data_get":               {&memoryv1.GetDataRequest{}, &memoryv1.GetDataReply{}},
	"scope_resolve":          {&memoryv1.ResolveRequest{}, &memoryv1.ResolveReply{}},
	"scope_publish":          {&memoryv1.PublishRequest{}, &memoryv1.EntryReply{}},
	"scope_conflicts":        {&memoryv1.ConflictsRequest{}, &memoryv1.ConflictsReply{}},
	"scope_settle":           {&memoryv1.SettleConflictRequest{}, &memoryv1.EntryReply{}},
	"agent_search":           {&memoryv1.SearchEntriesRequest{}, &memoryv1.SearchEntriesReply{}},
	"scope_search":           {&memoryv1.SearchEntriesRequest{}, &memoryv1.SearchEntriesReply{}},
	"session_erase":          {&memoryv1.EraseRequest{}, &memoryv1.EraseReceipt{}},
	"user_erase":             {&memoryv1.EraseRequest{}, &memoryv1.EraseReceipt{}},
	"agent_erase":            {&memoryv1.EraseRequest{}, &memoryv1.EraseReceipt{}},
	"scope_erase":            {&memoryv1.EraseRequest{}, &memoryv1.EraseReceipt{}},
}

// opAltReplies are the other reply of endpoints that answer one of two
// messages: a delete with erase: true answers an EraseReceipt.
var opAltReplies = map[string]proto.Message{
	"agent_delete": &memoryv1.EraseReceipt{},
	"scope_delete": &memoryv1.EraseReceipt{},
}

func init() {
	for op, req := range map[string]proto.Message{
		"put": &memoryv1.PutEntryRequest{}, "get": &memoryv1.GetEntryRequest{}, "delete": &memoryv1.DeleteEntryRequest{},
		"rollback": &memoryv1.RollbackEntryRequest{}, "list": &memoryv1.ListEntriesRequest{}, "history": &memoryv1.HistoryRequest{},
		"configure": &memoryv1.ConfigureScopeRequest{},
	} {
		var reply proto.Message = &memoryv1.EntryReply{}
		switch op {
		case "list":
			reply = &memoryv1.ListEntriesReply{}
		case "history":
			reply = &memoryv1.HistoryReply{}
		case "configure":
			reply = &memoryv1.ConfigureScopeReply{}
		}
		opTypes["agent_"+op] = [2]proto.Message{req, reply}
		opTypes["scope_"+op] = [2]proto.Message{req, reply}
	}
}

// routeTypes returns the request and reply descriptors of route r (opTypes);
// ok is false for a route opTypes does not name.
func routeTypes(r route) (req, reply protoreflect.MessageDescriptor, ok bool) {
	t, found := opTypes[r.name]
	if !found {
		return nil, nil, false
	}
	return t[0].ProtoReflect().Descriptor(), t[1].ProtoReflect().Descriptor(), true
}

// httpRoute is one route as the HTTP API serves it.
type httpRoute struct {
	route
	path   string   // /v1/session/{session_id}/append
	params []string // the path parameters, in order
}

// httpRoutes are the routes of the table served over HTTP, in a stable
// order: every route whose subject is a plain operation (the catch-alls
// that answer malformed subjects are not operations).
func (s *Service) httpRoutes() []httpRoute {
	var all []route
	for _, o := range s.routes.other {
		for _, op := range slices.Sorted(maps.Keys(o.byOp)) {
			all = append(all, o.byOp[op])
		}
	}
	all = append(all, s.routes.rest...)
	var out []httpRoute
	for _, r := range all {
		if slices.Contains(r.tokens, ">") || r.tokens[len(r.tokens)-1] == "*" {
			continue
		}
		hr := httpRoute{route: r}
		segs := make([]string, 0, len(r.tokens)-2)
		for i, t := range r.tokens[2:] {
			if t != "*" {
				segs = append(segs, t)
				continue
			}
			p := paramName(r.tokens[2:], i)
			hr.params = append(hr.params, p)
			segs = append(segs, "{"+p+"}")
		}
		hr.path = HTTPPrefix + strings.Join(segs, "/")
		out = append(out, hr)
	}
	slices.SortStableFunc(out, func(a, b httpRoute) int { return strings.Compare(a.path, b.path) })
	return out
}

// paramName names the wildcard at toks[i]: session_id after session,
// agent_id after agent, kind and scope_id after scope.
func paramName(toks []string, i int) string {
	prev := ""
	if i > 0 {
		prev = toks[i-1]
	}
	switch {
	case prev == "scope":
		return "kind"
	case i >= 2 && toks[i-2] == "scope":
		return "scope_id"
	case prev != "" && prev != "*":
		return prev + "_id"
	}
	return "param" + string(rune('0'+i))
}

// OpenAPI is the OpenAPI 3.1 document of the HTTP API, generated from the
// routes this service serves and the proto messages they take and answer.
func (s *Service) OpenAPI() []byte {
	s.openapiOnce.Do(func() { s.openapi = s.buildOpenAPI() })
	return s.openapi
}

type obj = map[string]any

func (s *Service) buildOpenAPI() []byte {
	schemas := obj{}
	g := schemaGen{defs: schemas}
	errRef := g.ref((&memoryv1.ErrorDetail{}).ProtoReflect().Descriptor())
	errResp := obj{"description": "an error: its code is the HTTP status; field names the input at fault", "content": obj{ContentTypeJSON: obj{"schema": errRef}}}
	paths := obj{}
	for _, r := range s.httpRoutes() {
		var params []any
		for _, p := range r.params {
			params = append(params, obj{"name": p, "in": "path", "required": true,
				"schema": obj{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}})
		}
		subject := strings.Join(r.tokens, ".")
		reqSchema, replySchema := obj{"type": "object"}, obj{"type": "object"}
		if q, p, ok := routeTypes(r.route); ok {
			reqSchema, replySchema = g.ref(q), g.ref(p)
			if alt, found := opAltReplies[r.name]; found {
				replySchema = obj{"oneOf": []any{replySchema, g.ref(alt.ProtoReflect().Descriptor())},
					"description": "EntryReply; EraseReceipt when the request has erase: true"}
			}
		}
		item := obj{}
		post := obj{
			"operationId": r.name,
			"summary":     "NATS subject " + subject,
			"requestBody": obj{"required": false, "content": obj{ContentTypeJSON: obj{"schema": reqSchema}}},
			"responses": obj{
				"200":     obj{"description": "the reply, as JSON over NATS", "content": obj{ContentTypeJSON: obj{"schema": replySchema}}},
				"default": errResp,
			},
		}
		if params != nil {
			post["parameters"] = params
		}
		item["post"] = post
		if r.tokens[len(r.tokens)-1] == "watch" {
			get := obj{
				"operationId": r.name + "_sse",
				"summary":     "the watch as Server-Sent Events: event change, id the stream sequence, data a WatchChange",
				"parameters": append(slices.Clone(params),
					obj{"name": "from_seq", "in": "query", "schema": obj{"type": "integer", "minimum": 0}},
					obj{"name": "max_changes", "in": "query", "schema": obj{"type": "integer", "minimum": 0, "maximum": MaxWatchChanges}},
					obj{"name": "decode_values", "in": "query", "schema": obj{"type": "boolean"}},
					obj{"name": "Last-Event-ID", "in": "header", "schema": obj{"type": "string"}}),
				"responses": obj{
					"200":     obj{"description": "a stream of change events", "content": obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}},
					"default": errResp,
				},
			}
			item["get"] = get
		}
		paths[r.path] = item
	}
	paths[HTTPPrefix+"openapi.json"] = obj{"get": obj{"operationId": "openapi", "summary": "this document",
		"responses": obj{"200": obj{"description": "OpenAPI 3.1", "content": obj{ContentTypeJSON: obj{"schema": obj{"type": "object"}}}}}}}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{"title": "agentmem", "version": s.cfg.Version,
			"description": "The agentmem API over HTTP: each operation is the NATS subject mem.v1.<…> as POST /v1/<…> (/ for .), with the same JSON bodies, replies and errors (DESIGN §8, §15). Bodies use the proto field names; 64-bit integers are JSON strings in replies and accepted as numbers or strings; enums accept their full or short lowercase names."},
		"paths":      paths,
		"components": obj{"schemas": schemas, "securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer"}}},
		"security":   []any{obj{}, obj{"bearer": []any{}}},
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		panic("api: openapi: " + err.Error()) // only maps, slices and strings
	}
	return b
}

// schemaGen writes the JSON Schema of proto messages (their protojson
// shape) into defs, by full name.
type schemaGen struct{ defs obj }

func (g schemaGen) ref(md protoreflect.MessageDescriptor) obj {
	if s, ok := wellKnown(md); ok {
		return s
	}
	name := string(md.Name())
	if md.Parent() != nil && md.Parent() != md.ParentFile() {
		name = strings.ReplaceAll(string(md.FullName()[len(md.ParentFile().Package())+1:]), ".", "_")
	}
	if _, done := g.defs[name]; !done {
		g.defs[name] = obj{} // placeholder: recursive messages
		g.defs[name] = g.message(md)
	}
	return obj{"$ref": "#/components/schemas/" + name}
}

func (g schemaGen) message(md protoreflect.MessageDescriptor) obj {
	props := obj{}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		props[string(fd.Name())] = g.field(fd)
	}
	return obj{"type": "object", "properties": props}
}

func (g schemaGen) field(fd protoreflect.FieldDescriptor) obj {
	switch {
	case fd.IsMap():
		return obj{"type": "object", "additionalProperties": g.single(fd.MapValue())}
	case fd.IsList():
		return obj{"type": "array", "items": g.single(fd)}
	}
	return g.single(fd)
}

func (g schemaGen) single(fd protoreflect.FieldDescriptor) obj {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return obj{"type": "boolean"}
	case protoreflect.StringKind:
		return obj{"type": "string"}
	case protoreflect.BytesKind:
		return obj{"type": "string", "contentEncoding": "base64"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return obj{"type": "integer", "format": "int32"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return obj{"type": "integer", "minimum": 0, "format": "uint32"}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return obj{"type": []any{"string", "integer"}, "format": "int64"}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return obj{"type": []any{"string", "integer"}, "format": "uint64"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return obj{"type": "number"}
	case protoreflect.EnumKind:
		// Replies carry the full names; requests may also send the short
		// lowercase ones ("user" for ROLE_USER).
		ed := fd.Enum()
		vals, prefix := ed.Values(), enumPrefix(ed)
		names := make([]any, 0, 2*vals.Len())
		for i := 0; i < vals.Len(); i++ {
			names = append(names, string(vals.Get(i).Name()))
		}
		for i := 0; i < vals.Len(); i++ {
			n := string(vals.Get(i).Name())
			if short := strings.ToLower(strings.TrimPrefix(n, prefix)); short != strings.ToLower(n) {
				names = append(names, short)
			}
		}
		return obj{"type": "string", "enum": names}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.ref(fd.Message())
	}
	return obj{}
}

// wellKnown is the protojson shape of the well-known types.
func wellKnown(md protoreflect.MessageDescriptor) (obj, bool) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return obj{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration":
		return obj{"type": "string"}, true
	case "google.protobuf.Any":
		return obj{"type": "object", "properties": obj{"@type": obj{"type": "string"}}}, true
	case "google.protobuf.Struct":
		return obj{"type": "object"}, true
	case "google.protobuf.Value":
		return obj{}, true
	case "google.protobuf.ListValue":
		return obj{"type": "array"}, true
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") && strings.HasSuffix(string(md.Name()), "Value") {
		return obj{}, true // wrappers: the bare value
	}
	return nil, false
}
