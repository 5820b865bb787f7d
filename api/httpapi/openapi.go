package httpapi

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/jsonbody"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// httpRoute is one operation as the HTTP API serves it.
type httpRoute struct {
	api.Operation
	tokens []string // the subject's
	path   string   // /v1/session/{session_id}/append
	params []string // the path parameters, in order
}

// httpRoutes are the operations served, at their paths, in path order.
func httpRoutes(ops []api.Operation) []httpRoute {
	var out []httpRoute
	for _, op := range ops {
		hr := httpRoute{Operation: op, tokens: strings.Split(op.Subject, ".")}
		segs := make([]string, 0, len(hr.tokens)-2)
		for i, t := range hr.tokens[2:] {
			if t != "*" {
				segs = append(segs, t)
				continue
			}
			p := paramName(hr.tokens[2:], i)
			hr.params = append(hr.params, p)
			segs = append(segs, "{"+p+"}")
		}
		hr.path = Prefix + strings.Join(segs, "/")
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

type obj = map[string]any

// errorStatuses are the error replies every operation may answer, with
// what each means; writeStatuses are those only a write answers.
var (
	errorStatuses = []struct{ code, desc string }{
		{"400", "the request is malformed: field names the input at fault (messages[0].role, limit, path)"},
		{"401", "with tenants: no bearer token, or an unknown one (field authorization)"},
		{"403", "the caller may not do this (field identity, origin, host, or the scope or session refused)"},
		{"404", "what the path or body names does not exist (field session_id, key, operation, …)"},
		{"413", "a body or a value beyond a bound, or a caller beyond a quota (field body, max_…)"},
		{"415", "the body is not JSON (field content-type)"},
		{"429", "too many requests of this caller in flight (field max_…): retry after a moment"},
		{"503", "the node cannot serve this now (stopping, projection behind min_seq, overloaded): retry"},
		{"504", "no reply in time: the operation may still complete; retry with the same command_id"},
	}
	writeStatuses = []struct{ code, desc string }{
		{"409", "the write conflicts with the state (expected_version, a command_id reused for another request, a terminated session)"},
	}
)

// buildOpenAPI is the OpenAPI 3.1 document of the HTTP API, generated from
// the operations served (api/operations.go), the proto messages they read
// and answer, and the field rules of contract.go (required fields, enums,
// bounds).
func buildOpenAPI(ops []api.Operation, version string) []byte {
	g := newSchemaGen(ops)
	errRef := g.ref((&memoryv1.ErrorDetail{}).ProtoReflect().Descriptor(), false)
	responses := obj{}
	for _, e := range append(slices.Clone(errorStatuses), writeStatuses...) {
		responses["Error"+e.code] = obj{"description": e.desc, "content": obj{api.ContentTypeJSON: obj{"schema": errRef}}}
	}
	responses["Error"] = obj{"description": "any other error: code is the HTTP status", "content": obj{api.ContentTypeJSON: obj{"schema": errRef}}}
	errorsOf := func(write bool) obj {
		out := obj{}
		for _, e := range errorStatuses {
			out[e.code] = obj{"$ref": "#/components/responses/Error" + e.code}
		}
		if write {
			for _, e := range writeStatuses {
				out[e.code] = obj{"$ref": "#/components/responses/Error" + e.code}
			}
		}
		out["default"] = obj{"$ref": "#/components/responses/Error"}
		return out
	}
	paths := obj{}
	tags := map[string]bool{}
	for _, r := range httpRoutes(ops) {
		var params []any
		for _, p := range r.params {
			params = append(params, pathParam(p, r.Kinds))
		}
		subject := r.Subject
		q := r.Request.ProtoReflect().Descriptor()
		reqSchema, replySchema := g.ref(q, true), g.ref(r.Reply.ProtoReflect().Descriptor(), false)
		if r.EraseReply != nil {
			replySchema = obj{"oneOf": []any{replySchema, g.ref(r.EraseReply.ProtoReflect().Descriptor(), false)},
				"description": "EntryReply; EraseReceipt when the request has erase: true"}
		}
		tag := r.tokens[2]
		tags[tag] = true
		write := q.Fields().ByName("command_id") != nil
		resps := errorsOf(write)
		resps["200"] = obj{"description": "the reply, as JSON over NATS", "content": obj{api.ContentTypeJSON: obj{"schema": replySchema}}}
		post := obj{
			"operationId": r.Name,
			"tags":        []any{tag},
			"summary":     r.Summary,
			"description": r.Description + " Who may call: " + r.Access + ". NATS subject " + subject + ".",
			"requestBody": obj{"required": false, "content": obj{api.ContentTypeJSON: obj{"schema": reqSchema}}},
			"responses":   resps,
		}
		if params != nil {
			post["parameters"] = params
		}
		item := obj{"post": post}
		if r.tokens[len(r.tokens)-1] == "watch" {
			sse := errorsOf(false)
			sse["200"] = obj{"description": "a stream of events: a comment line at once, then each change as an event change (id: its stream sequence, data: a WatchChange as JSON); an event error (data: an ErrorDetail) ends the stream, a session that does not exist or was erased included",
				"content": obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}}
			item["get"] = obj{
				"operationId": r.Name + "_sse",
				"tags":        []any{tag},
				"summary":     "Follow the changes as Server-Sent Events",
				"description": "The watch as Server-Sent Events: a reconnecting EventSource sends Last-Event-ID and the stream resumes after it.",
				"parameters": append(slices.Clone(params),
					obj{"name": "from_seq", "in": "query", "description": "changes after this stream sequence (0: from the start)", "schema": obj{"type": "integer", "minimum": 0}},
					obj{"name": "max_changes", "in": "query", "description": "changes per poll, 1..256 (0: 64)", "schema": obj{"type": "integer", "minimum": 0, "maximum": api.MaxWatchChanges}},
					obj{"name": "decode_values", "in": "query", "description": "entry values decompressed", "schema": obj{"type": "boolean"}},
					obj{"name": "Last-Event-ID", "in": "header", "description": "the id of the last event received: the stream resumes after it (overrides from_seq)", "schema": obj{"type": "string", "pattern": "^[0-9]+$"}}),
				"responses": sse,
			}
		}
		paths[r.path] = item
	}
	paths[Prefix+"openapi.json"] = obj{"get": obj{"operationId": "openapi", "tags": []any{"meta"}, "summary": "This document",
		"description": "The OpenAPI 3.1 document of the HTTP API, generated from the routes the node serves.",
		"security":    []any{},
		"responses": obj{"200": obj{"description": "OpenAPI 3.1", "content": obj{api.ContentTypeJSON: obj{"schema": obj{"type": "object"}}}},
			"404": obj{"$ref": "#/components/responses/Error404"}}}}
	tags["meta"] = true
	var tagList []any
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		tagList = append(tagList, obj{"name": t, "description": tagDescriptions[t]})
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{"title": "agentmem", "version": version,
			"license":     obj{"name": "Apache-2.0", "identifier": "Apache-2.0"},
			"description": apiDescription},
		"servers": []any{obj{"url": "http://127.0.0.1:9090", "description": "a node's HTTP listener (--http; this is its default)"}},
		"tags":    tagList,
		"paths":   paths,
		"components": obj{"schemas": g.defs, "responses": responses,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer",
				"description": "with --tenants: a token of the tenants file's http_tokens; the single-user node takes none (loopback clients only)"}}},
		"security": []any{obj{}, obj{"bearer": []any{}}},
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		panic("api: openapi: " + err.Error()) // only maps, slices and strings
	}
	return b
}

const apiDescription = "The agentmem API over HTTP: each operation is the NATS subject mem.v1.<…> as " +
	"POST /v1/<…> (/ for .), with the same JSON bodies, replies and errors. Bodies use the proto field " +
	"names; 64-bit integers are JSON strings in replies (pattern ^-?[0-9]+$) and accepted as numbers or " +
	"strings; enums are their full names in replies and accepted by their short lowercase names too. " +
	"A body is read as JSON under application/json, text/plain or no Content-Type. Writes carry a " +
	"command_id: a retry with the same one is stored once (result.duplicate: true). Reads of the " +
	"projection (search, recall, list) see the caller's own last write: they wait, bounded, for it; " +
	"min_seq (a result.seq of a reply) makes a read wait for any write, 503 min_seq past the bound."

var tagDescriptions = map[string]string{
	"session":  "A conversation: its messages, context, search and lifecycle.",
	"sessions": "The sessions index.",
	"agent":    "An agent's private long-term memory.",
	"scope":    "Shared long-term memory: user, project, app, workflow, swarm, debate, agent_type, global and session scopes.",
	"user":     "A user: erasure of everything they said and everything learned from it.",
	"data":     "Large data (tool results, files) stored beside the log.",
	"tools":    "The memory tools an LLM calls.",
	"meta":     "This document.",
}

// pathParam is the OpenAPI parameter of a path wildcard.
func pathParam(name string, opKinds []string) obj {
	if name == "kind" {
		kinds := scopeKinds
		if opKinds != nil {
			kinds = opKinds
		}
		return obj{"name": name, "in": "path", "required": true, "description": "the scope's kind (the global scope's id is global)",
			"schema": obj{"type": "string", "enum": stringsAny(kinds)}}
	}
	return obj{"name": name, "in": "path", "required": true, "description": "an id: 1..128 of A-Z a-z 0-9 _ -",
		"schema": obj{"type": "string", "pattern": idPattern}}
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// schemaGen writes the JSON Schema of proto messages (their protojson
// shape, as the JSON decoder reads them in a request and the encoder writes
// them in a reply) into defs.
type schemaGen struct {
	defs obj
	// inputs are the messages also written in replies: their request
	// schema is named <Name>Input.
	inReply map[protoreflect.FullName]bool
}

func newSchemaGen(ops []api.Operation) *schemaGen {
	g := &schemaGen{defs: obj{}, inReply: map[protoreflect.FullName]bool{}}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if g.inReply[md.FullName()] {
			return
		}
		g.inReply[md.FullName()] = true
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil {
				walk(fd.Message())
			}
		}
	}
	for _, op := range ops {
		walk(op.Reply.ProtoReflect().Descriptor())
		if op.EraseReply != nil {
			walk(op.EraseReply.ProtoReflect().Descriptor())
		}
	}
	walk((&memoryv1.ErrorDetail{}).ProtoReflect().Descriptor())
	return g
}

// schemaName is the component name of md on one side.
func (g *schemaGen) schemaName(md protoreflect.MessageDescriptor, input bool) string {
	name := string(md.Name())
	if md.Parent() != nil && md.Parent() != md.ParentFile() {
		name = strings.ReplaceAll(string(md.FullName()[len(md.ParentFile().Package())+1:]), ".", "_")
	}
	if input && g.inReply[md.FullName()] {
		name += "Input"
	}
	return name
}

func (g *schemaGen) ref(md protoreflect.MessageDescriptor, input bool) obj {
	if s, ok := wellKnown(md); ok {
		return s
	}
	name := g.schemaName(md, input)
	if _, done := g.defs[name]; !done {
		g.defs[name] = obj{} // placeholder: recursive messages
		g.defs[name] = g.message(md, input)
	}
	return obj{"$ref": "#/components/schemas/" + name}
}

// message is the schema of md. A request schema lists the fields a request
// must send (contract.go) and refuses unknown members, as the decoder does;
// a reply schema lists what every reply carries: every field that is not
// a message or a oneof member (replies carry zero values), and the message
// fields contract.go marks as always set.
func (g *schemaGen) message(md protoreflect.MessageDescriptor, input bool) obj {
	props := obj{}
	var required []any
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		name := string(fd.Name())
		rule := fieldRules[string(md.Name())+"."+name]
		if input && rule.replyOnly {
			continue
		}
		props[name] = g.field(fd, rule, input)
		switch {
		case input && rule.required:
			required = append(required, name)
		case !input && rule.optionalInReply:
		case !input && rule.alwaysSet:
			required = append(required, name)
		case !input && fd.Message() != nil && !fd.IsList() && !fd.IsMap():
		case !input && fd.ContainingOneof() != nil:
		case !input:
			required = append(required, name)
		}
	}
	out := obj{"type": "object", "properties": props}
	if d := messageDocs[string(md.Name())]; d != "" {
		out["description"] = d
	}
	if len(required) > 0 {
		out["required"] = required
	}
	if input {
		out["additionalProperties"] = false
		oneofs := md.Oneofs()
		for i := 0; i < oneofs.Len(); i++ {
			od := oneofs.Get(i)
			if od.IsSynthetic() {
				continue
			}
			// At most one member of a oneof may be sent.
			var pairs []any
			for a := 0; a < od.Fields().Len(); a++ {
				for b := a + 1; b < od.Fields().Len(); b++ {
					pairs = append(pairs, requires(string(od.Fields().Get(a).Name()), string(od.Fields().Get(b).Name())))
				}
			}
			out["not"] = obj{"anyOf": pairs}
		}
	}
	if x, ok := messageExtras[string(md.Name())]; ok {
		x(g, out, input)
	}
	return out
}

// requires is a subschema that requires names (naming them as properties
// too, so that a linter sees each required name is one the object has).
func requires(names ...string) obj {
	props := obj{}
	for _, n := range names {
		props[n] = obj{}
	}
	return obj{"required": stringsAny(names), "properties": props}
}

func (g *schemaGen) field(fd protoreflect.FieldDescriptor, rule fieldRule, input bool) obj {
	var s obj
	switch {
	case fd.IsMap():
		s = obj{"type": "object", "additionalProperties": g.single(fd.MapValue(), fieldRule{}, input)}
		if rule.maxItems > 0 {
			s["maxProperties"] = rule.maxItems
		}
	case fd.IsList():
		s = obj{"type": "array", "items": g.single(fd, rule, input)}
		if rule.minItems > 0 {
			s["minItems"] = rule.minItems
		}
		if rule.maxItems > 0 {
			s["maxItems"] = rule.maxItems
		}
	default:
		s = g.single(fd, rule, input)
	}
	if rule.desc != "" {
		if _, isRef := s["$ref"]; isRef {
			s = obj{"allOf": []any{s}}
		}
		s["description"] = rule.desc
	}
	return s
}

// Patterns of strings the decoder and the server read.
const (
	idPattern = "^[A-Za-z0-9_-]{1,128}$"
	// A 64-bit integer as a string: any in a reply; in a request the
	// pattern keeps to what always fits (18 digits signed, 19 unsigned; the
	// server takes the whole range, which a pattern cannot bound).
	int64Pattern       = "^-?[0-9]{1,19}$"
	uint64Pattern      = "^[0-9]{1,20}$"
	int64InputPattern  = "^-?[0-9]{1,18}$"
	uint64InputPattern = "^[0-9]{1,19}$"
	// base64Pattern: standard base64, padded (the decoder also takes the
	// URL alphabet and no padding).
	base64Pattern = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
)

// single is the schema of one value of fd (an element of a list).
func (g *schemaGen) single(fd protoreflect.FieldDescriptor, rule fieldRule, input bool) obj {
	var s obj
	switch fd.Kind() {
	case protoreflect.BoolKind:
		s = obj{"type": "boolean"}
	case protoreflect.StringKind:
		s = obj{"type": "string"}
		switch {
		case len(rule.enum) > 0:
			vals := stringsAny(rule.enum)
			if !input && !rule.alwaysSet {
				vals = append(vals, "") // a reply writes an unset string as ""
			}
			s["enum"] = vals
		case rule.pattern != "":
			s["pattern"] = rule.pattern
		}
		if rule.maxLength > 0 {
			s["maxLength"] = rule.maxLength
		}
		if rule.minLength > 0 {
			s["minLength"] = rule.minLength
		}
	case protoreflect.BytesKind:
		s = obj{"type": "string", "contentEncoding": "base64"}
		if input {
			s["pattern"] = base64Pattern
		}
		if rule.maxLength > 0 {
			s["maxLength"] = rule.maxLength
		}
		if rule.minLength > 0 {
			s["minLength"] = rule.minLength
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s = obj{"type": "integer", "format": "int32", "minimum": math.MinInt32, "maximum": math.MaxInt32}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s = obj{"type": "integer", "format": "uint32", "minimum": 0, "maximum": uint64(math.MaxUint32)}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		s = int64Schema(int64Pattern, "int64", input, rule)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s = int64Schema(uint64Pattern, "uint64", input, rule)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		s = obj{"type": "number"}
	case protoreflect.EnumKind:
		s = obj{"type": "string", "enum": stringsAny(enumValues(fd.Enum(), input))}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.ref(fd.Message(), input)
	default:
		s = obj{}
	}
	if input {
		// A bound of a request value: in an integer carried as a string
		// too, the bound is the server's.
		if rule.min != nil {
			setBound(s, "minimum", *rule.min)
		}
		if rule.max != nil {
			setBound(s, "maximum", *rule.max)
		}
	}
	return s
}

// int64Schema: a 64-bit integer is a JSON string in a reply (it may not fit
// a double) and a number or a string in a request. A request value with an
// upper bound that a double holds exactly is a number only (the string form
// exists for values beyond it); a lower bound of 0 or -1 is also the
// string's pattern.
func int64Schema(pattern, format string, input bool, rule fieldRule) obj {
	str := obj{"type": "string", "pattern": pattern, "format": format}
	if !input {
		return str
	}
	num := obj{"type": "integer", "format": format}
	if format == "uint64" {
		num["minimum"] = 0
	}
	if rule.max != nil && *rule.max <= 1<<53 {
		return num
	}
	str["pattern"] = map[string]string{int64Pattern: int64InputPattern, uint64Pattern: uint64InputPattern}[pattern]
	if rule.min != nil {
		switch *rule.min {
		case 0:
			str["pattern"] = uint64InputPattern
		case -1:
			str["pattern"] = "^(-1|[0-9]{1,18})$"
		}
	}
	return obj{"anyOf": []any{num, str}}
}

// setBound sets a numeric bound on s, or on the integer branch of an
// integer that may also be a string (int64Schema bounds the string by its
// pattern).
func setBound(s obj, key string, v float64) {
	if alts, ok := s["anyOf"].([]any); ok {
		alts[0].(obj)[key] = v
		return
	}
	s[key] = v
}

// enumValues are the names of ed's values a reply carries (every full
// name) or a request may send (the full names and the short lowercase
// ones, the UNSPECIFIED zero value left out: it is the value of a field
// not sent).
func enumValues(ed protoreflect.EnumDescriptor, input bool) []string {
	vals, prefix := ed.Values(), jsonbody.EnumPrefix(ed)
	var names, short []string
	for i := 0; i < vals.Len(); i++ {
		v := vals.Get(i)
		n := string(v.Name())
		if input && v.Number() == 0 && strings.HasSuffix(n, "UNSPECIFIED") {
			continue
		}
		names = append(names, n)
		if s := strings.ToLower(strings.TrimPrefix(n, prefix)); input && s != strings.ToLower(n) {
			short = append(short, s)
		}
	}
	return append(short, names...)
}

// wellKnown is the protojson shape of the well-known types.
func wellKnown(md protoreflect.MessageDescriptor) (obj, bool) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return obj{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration":
		return obj{"type": "string"}, true
	case "google.protobuf.Any":
		return obj{"type": "object", "description": "a stored event: @type names its message, the other members are its fields",
			"properties": obj{"@type": obj{"type": "string"}}, "required": []any{"@type"}}, true
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
