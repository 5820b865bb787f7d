package jsonbody

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// JSON request bodies are read in two steps. Read parses the body into
// a tree and walks it beside the request's message descriptor: it accepts
// the spellings an LLM API uses and rewrites them to protojson's (enum
// values by their short lowercase name, "user" for ROLE_USER; OpenAI tool
// calls {id, type: "function", function: {name, arguments}}; content as an
// array of text parts), and it checks every value's type, so an error names
// the field path as sent (messages[0].role, toolCalls[1].function.name).
// protojson then decodes the rewritten tree: it stays the one definition of
// what a JSON body means.

// jsonValue is one parsed JSON value: *jsonObject, []jsonValue, string,
// json.Number, bool or nil.
type jsonValue = any

// jsonObject keeps its members in the order sent.
type jsonObject struct {
	keys []string
	vals map[string]jsonValue
}

func (o *jsonObject) get(k string) (jsonValue, bool) { v, ok := o.vals[k]; return v, ok }

func (o *jsonObject) set(k string, v jsonValue) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *jsonObject) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// maxJSONDepth bounds nesting (protojson's own limit is 10000).
const maxJSONDepth = 100

// Read normalizes and checks data as a JSON encoding of md. It returns the
// protojson text to decode (protojson.Unmarshal accepts it), or an *Error
// naming the field.
func Read(data []byte, md protoreflect.MessageDescriptor) ([]byte, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil // an empty body is the empty request
	}
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	root, err := p.value("", 0)
	if err != nil {
		return nil, err
	}
	if _, terr := p.dec.Token(); terr != io.EOF {
		return nil, &Error{Field: "body", Message: "invalid JSON: more than one value in the body"}
	}
	if root == nil {
		return nil, fieldErr("", "expected an object (%s), got null", md.Name())
	}
	if err := checkMessage(root, md, ""); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	writeJSON(&out, root)
	return out.Bytes(), nil
}

type jsonParser struct{ dec *json.Decoder }

// value reads one JSON value at path.
func (p *jsonParser) value(path string, depth int) (jsonValue, *Error) {
	if depth > maxJSONDepth {
		return nil, fieldErr(path, "JSON nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{vals: map[string]jsonValue{}}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.syntax(path, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, p.syntax(path, fmt.Errorf("object key %v is not a string", kt))
				}
				sub := join(path, k)
				if _, dup := o.vals[k]; dup {
					return nil, fieldErr(sub, "sent twice")
				}
				v, verr := p.value(sub, depth+1)
				if verr != nil {
					return nil, verr
				}
				o.set(k, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.syntax(path, err)
			}
			return o, nil
		case '[':
			a := []jsonValue{}
			for i := 0; p.dec.More(); i++ {
				v, verr := p.value(fmt.Sprintf("%s[%d]", path, i), depth+1)
				if verr != nil {
					return nil, verr
				}
				a = append(a, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.syntax(path, err)
			}
			return a, nil
		}
		return nil, p.syntax(path, fmt.Errorf("unexpected %v", t))
	default:
		return tok, nil
	}
}

// syntax reports invalid JSON met while reading the value at path.
func (p *jsonParser) syntax(path string, err error) *Error {
	if path == "" {
		path = "body"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fieldErr(path, "invalid JSON: the body ends before this value does")
	}
	msg := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg = fmt.Sprintf("%s (byte %d)", se.Error(), se.Offset)
	}
	return fieldErr(path, "invalid JSON: %s", msg)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Error is a body that does not read as the message: Field is the path of
// the value at fault as sent (messages[0].role; "body" for the whole).
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

func fieldErr(path, format string, args ...any) *Error {
	if path == "" {
		path = "body"
	}
	return &Error{Field: path, Message: fmt.Sprintf(format, args...)}
}

func jsonKind(v jsonValue) string {
	switch v.(type) {
	case *jsonObject:
		return "an object"
	case []jsonValue:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Message full names whose JSON shape is normalized.
const (
	toolCallName     = "agentmem.memory.v1.ToolCall"
	messageInputName = "agentmem.memory.v1.MessageInput"
)

// openAIResponseExtras are members of an OpenAI response message that a
// client may pass back as it got them; dropped when null or empty.
var openAIResponseExtras = []string{"refusal", "annotations", "audio", "function_call"}

// foldOpenAIReply reads the members of an OpenAI reply message that carry
// its text elsewhere than content: a refusal, or an audio reply's
// transcript, is stored as the content when there is none (a refusal
// beside content is added after it); annotations (citations into the
// content) are not stored. The role developer (OpenAI's newer name for
// instructions) is read as system.
func foldOpenAIReply(o *jsonObject, path string) *Error {
	content, _ := o.get("content")
	text, _ := content.(string)
	if r, ok := o.get("refusal"); ok && r != nil {
		s, isStr := r.(string)
		if !isStr {
			return fieldErr(join(path, "refusal"), "expected a string or null, got %s", jsonKind(r))
		}
		if s != "" {
			if text != "" {
				text += "\n"
			}
			text += s
			o.set("content", text)
		}
		o.del("refusal")
	}
	if a, ok := o.get("audio"); ok && a != nil {
		ao, isObj := a.(*jsonObject)
		if !isObj {
			return fieldErr(join(path, "audio"), "expected an object or null, got %s", jsonKind(a))
		}
		if t, _ := ao.get("transcript"); text == "" {
			if s, _ := t.(string); s != "" {
				text = s
				o.set("content", s)
			}
		}
		o.del("audio")
	}
	if a, ok := o.get("annotations"); ok && a != nil {
		if _, isArr := a.([]jsonValue); !isArr {
			return fieldErr(join(path, "annotations"), "expected an array, got %s", jsonKind(a))
		}
		o.del("annotations")
	}
	if r, ok := o.get("role"); ok {
		if s, _ := r.(string); strings.EqualFold(s, "developer") {
			o.set("role", "ROLE_SYSTEM")
		}
	}
	return nil
}

// checkMessage checks (and normalizes) v as a JSON encoding of md at path.
func checkMessage(v jsonValue, md protoreflect.MessageDescriptor, path string) *Error {
	if v == nil {
		return nil // null: the field is unset
	}
	switch md.FullName() {
	case "google.protobuf.Value":
		return nil
	case "google.protobuf.Struct":
		if _, ok := v.(*jsonObject); !ok {
			return fieldErr(path, "expected an object, got %s", jsonKind(v))
		}
		return nil
	case "google.protobuf.ListValue":
		if _, ok := v.([]jsonValue); !ok {
			return fieldErr(path, "expected an array, got %s", jsonKind(v))
		}
		return nil
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return nil // other well-known types: protojson's own forms
	}
	o, ok := v.(*jsonObject)
	if !ok {
		return fieldErr(path, "expected an object (%s), got %s", md.Name(), jsonKind(v))
	}
	switch md.FullName() {
	case toolCallName:
		if err := normalizeToolCall(o, path); err != nil {
			return err
		}
	case messageInputName:
		if err := normalizeContent(o, path); err != nil {
			return err
		}
		if err := foldOpenAIReply(o, path); err != nil {
			return err
		}
		for _, k := range openAIResponseExtras {
			if x, ok := o.get(k); ok && isEmpty(x) {
				o.del(k)
			}
		}
	}
	fields := md.Fields()
	oneofs := map[protoreflect.FullName]string{} // oneof -> the member sent
	for _, k := range append([]string(nil), o.keys...) {
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByTextName(k)
		}
		sub := join(path, k)
		if fd == nil {
			return fieldErr(sub, "unknown field; %s has %s", md.Name(), fieldList(md))
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && o.vals[k] != nil {
			if prev, ok := oneofs[od.FullName()]; ok {
				return fieldErr(sub, "sent with %s: only one of %s may be set", join(path, prev), oneofList(od))
			}
			oneofs[od.FullName()] = k
		}
		norm, err := checkField(o.vals[k], fd, sub)
		if err != nil {
			return err
		}
		o.vals[k] = norm
	}
	return nil
}

func oneofList(od protoreflect.OneofDescriptor) string {
	names := make([]string, od.Fields().Len())
	for i := range names {
		names[i] = string(od.Fields().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func isEmpty(v jsonValue) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []jsonValue:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

func fieldList(md protoreflect.MessageDescriptor) string {
	fs := md.Fields()
	names := make([]string, fs.Len())
	for i := range names {
		names[i] = string(fs.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// checkField checks v as the value of field fd and returns it normalized.
func checkField(v jsonValue, fd protoreflect.FieldDescriptor, path string) (jsonValue, *Error) {
	if v == nil {
		return nil, nil
	}
	switch {
	case fd.IsMap():
		o, ok := v.(*jsonObject)
		if !ok {
			return nil, fieldErr(path, "expected an object, got %s", jsonKind(v))
		}
		for _, k := range o.keys {
			norm, err := checkScalarOrMessage(o.vals[k], fd.MapValue(), fmt.Sprintf("%s[%q]", path, k))
			if err != nil {
				return nil, err
			}
			o.vals[k] = norm
		}
		return o, nil
	case fd.IsList():
		a, ok := v.([]jsonValue)
		if !ok {
			return nil, fieldErr(path, "expected an array, got %s", jsonKind(v))
		}
		for i, x := range a {
			sub := fmt.Sprintf("%s[%d]", path, i)
			if x == nil {
				return nil, fieldErr(sub, "null is not allowed in an array")
			}
			norm, err := checkScalarOrMessage(x, fd, sub)
			if err != nil {
				return nil, err
			}
			a[i] = norm
		}
		return a, nil
	}
	return checkScalarOrMessage(v, fd, path)
}

// checkScalarOrMessage checks v as one value of fd and returns it
// normalized (enum aliases to their names).
func checkScalarOrMessage(v jsonValue, fd protoreflect.FieldDescriptor, path string) (jsonValue, *Error) {
	if v == nil {
		return nil, nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return v, checkMessage(v, fd.Message(), path)
	case protoreflect.EnumKind:
		return checkEnum(v, fd.Enum(), path)
	case protoreflect.StringKind:
		if _, ok := v.(string); !ok {
			return nil, fieldErr(path, "expected a string, got %s", jsonKind(v))
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return nil, fieldErr(path, "expected true or false, got %s", jsonKind(v))
		}
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			return nil, fieldErr(path, "expected a base64 string, got %s", jsonKind(v))
		}
		if !isBase64(s) {
			return nil, fieldErr(path, "expected base64 (standard or URL alphabet), got %q", clip(s))
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return checkFloat(v, fd.Kind() == protoreflect.FloatKind, path)
	default:
		return checkInt(v, fd.Kind(), path)
	}
	return v, nil
}

func isBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// checkInt checks an integer field: a JSON number or a string holding one
// (protojson writes 64-bit integers as strings), integral and in range. It
// returns the value as a plain decimal number.
func checkInt(v jsonValue, k protoreflect.Kind, path string) (jsonValue, *Error) {
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = strings.TrimSpace(x)
	default:
		return nil, fieldErr(path, "expected an integer, got %s", jsonKind(v))
	}
	f, _, err := big.ParseFloat(text, 10, 256, big.ToNearestEven)
	if err != nil || f.IsInf() || !f.IsInt() {
		return nil, fieldErr(path, "expected an integer, got %q", clip(text))
	}
	var lo, hi *big.Int
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		lo, hi = big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		lo, hi = big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	default:
		lo, hi = big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	}
	// Compare as floats: 1e999999999 must not become a billion-digit Int.
	if f.Cmp(new(big.Float).SetInt(lo)) < 0 || f.Cmp(new(big.Float).SetInt(hi)) > 0 {
		return nil, fieldErr(path, "%s is out of range for %s (%s..%s)", clip(text), k, lo, hi)
	}
	n, _ := f.Int(nil)
	return json.Number(n.String()), nil
}

// checkFloat checks a float field: a JSON number, or a string holding one
// or "NaN", "Infinity", "-Infinity". It returns the value in protojson's
// form.
func checkFloat(v jsonValue, float32Kind bool, path string) (jsonValue, *Error) {
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		switch x {
		case "NaN", "Infinity", "-Infinity":
			return x, nil
		}
		text = strings.TrimSpace(x)
	default:
		return nil, fieldErr(path, "expected a number, got %s", jsonKind(v))
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fieldErr(path, "expected a number, got %q", clip(text))
	}
	if float32Kind && math.Abs(f) > math.MaxFloat32 {
		return nil, fieldErr(path, "%s is out of range for float", clip(text))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// checkEnum accepts an enum value by number, by its name (ROLE_USER) or by
// its name without the enum's prefix in any case ("user", "User").
func checkEnum(v jsonValue, ed protoreflect.EnumDescriptor, path string) (jsonValue, *Error) {
	values := ed.Values()
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 32)
		if err != nil {
			return nil, fieldErr(path, "expected one of %s, got %s", enumList(ed), x)
		}
		return json.Number(strconv.FormatInt(n, 10)), nil // protojson keeps unknown numbers of an open enum
	case string:
		if values.ByName(protoreflect.Name(x)) != nil {
			return x, nil
		}
		if name := enumAlias(ed, x); name != "" {
			return name, nil
		}
		return nil, fieldErr(path, "%q is not a %s; use one of %s", clip(x), ed.Name(), enumList(ed))
	default:
		return nil, fieldErr(path, "expected one of %s, got %s", enumList(ed), jsonKind(v))
	}
}

// EnumPrefix is the prefix every value name of ed shares by the protobuf
// style guide: ROLE_ for Role, CONTEXT_FORMAT_ for ContextFormat.
func EnumPrefix(ed protoreflect.EnumDescriptor) string {
	var b strings.Builder
	for i, r := range string(ed.Name()) {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String() + "_"
}

func enumAlias(ed protoreflect.EnumDescriptor, s string) string {
	up := strings.ToUpper(strings.TrimSpace(s))
	for _, cand := range []string{up, EnumPrefix(ed) + up} {
		if ev := ed.Values().ByName(protoreflect.Name(cand)); ev != nil {
			return cand
		}
	}
	return ""
}

// enumList names the values a client may send: the short lowercase forms
// (the unspecified zero value left out).
func enumList(ed protoreflect.EnumDescriptor) string {
	prefix := EnumPrefix(ed)
	var names []string
	for i := 0; i < ed.Values().Len(); i++ {
		n := string(ed.Values().Get(i).Name())
		short := strings.ToLower(strings.TrimPrefix(n, prefix))
		if ed.Values().Get(i).Number() == 0 && strings.HasSuffix(n, "UNSPECIFIED") {
			continue
		}
		names = append(names, strconv.Quote(short))
	}
	return strings.Join(names, ", ") + " (or the full names, " + prefix + "…)"
}

// normalizeToolCall rewrites the OpenAI shape {id, type: "function",
// function: {name, arguments}} to ToolCall {id, name, arguments}. arguments
// sent as a JSON value instead of a string are kept as their JSON text.
func normalizeToolCall(o *jsonObject, path string) *Error {
	if t, ok := o.get("type"); ok {
		if s, isStr := t.(string); t != nil && (!isStr || s != "function") {
			return fieldErr(join(path, "type"), `only "function" tool calls are stored, got %s`, describe(t))
		}
		o.del("type")
	}
	if f, ok := o.get("function"); ok {
		fpath := join(path, "function")
		fo, isObj := f.(*jsonObject)
		if !isObj {
			return fieldErr(fpath, "expected an object {name, arguments}, got %s", jsonKind(f))
		}
		for _, k := range fo.keys {
			switch k {
			case "name", "arguments":
				if _, dup := o.get(k); dup {
					return fieldErr(join(fpath, k), "sent both here and as %s", join(path, k))
				}
				o.set(k, fo.vals[k])
			default:
				return fieldErr(join(fpath, k), "unknown field; function has name, arguments")
			}
		}
		o.del("function")
		if err := stringifyArguments(o, join(fpath, "arguments")); err != nil {
			return err
		}
		return nil
	}
	return stringifyArguments(o, join(path, "arguments"))
}

func stringifyArguments(o *jsonObject, path string) *Error {
	a, ok := o.get("arguments")
	if !ok || a == nil {
		return nil
	}
	switch a.(type) {
	case string:
		return nil
	case *jsonObject, []jsonValue:
		var b bytes.Buffer
		writeJSON(&b, a)
		o.set("arguments", b.String())
		return nil
	}
	return fieldErr(path, "expected a JSON string (or object) of arguments, got %s", jsonKind(a))
}

func describe(v jsonValue) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(clip(s))
	}
	return jsonKind(v)
}

// normalizeContent joins content sent as an array of text parts
// ([{"type":"text","text":"…"}], the OpenAI form) into one string.
func normalizeContent(o *jsonObject, path string) *Error {
	c, ok := o.get("content")
	if !ok {
		return nil
	}
	parts, ok := c.([]jsonValue)
	if !ok {
		return nil
	}
	cpath := join(path, "content")
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		ppath := fmt.Sprintf("%s[%d]", cpath, i)
		if s, ok := p.(string); ok {
			texts = append(texts, s)
			continue
		}
		po, ok := p.(*jsonObject)
		if !ok {
			return fieldErr(ppath, "expected a content part {type: \"text\", text}, got %s", jsonKind(p))
		}
		if t, _ := po.get("type"); t != "text" {
			return fieldErr(join(ppath, "type"), `only "text" parts are stored, got %s`, describe(t))
		}
		text, ok := po.get("text")
		s, isStr := text.(string)
		if !ok || !isStr {
			return fieldErr(join(ppath, "text"), "expected a string, got %s", jsonKind(text))
		}
		texts = append(texts, s)
	}
	o.set("content", strings.Join(texts, "\n"))
	return nil
}

// writeJSON encodes a parsed tree (numbers as sent).
func writeJSON(b *bytes.Buffer, v jsonValue) {
	switch x := v.(type) {
	case *jsonObject:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSON(b, x.vals[k])
		}
		b.WriteByte('}')
	case []jsonValue:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case string:
		writeString(b, x)
	case json.Number:
		b.WriteString(string(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString("null")
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}
