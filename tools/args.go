package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiled is every tool's input schema compiled as JSON Schema draft
// 2020-12 (compiling checks each against the draft's meta-schema).
var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	out := make(map[string]*jsonschema.Schema, len(all))
	for _, t := range all {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.InputSchema))
		if err != nil {
			return nil, fmt.Errorf("tools: schema of %s: %w", t.Name, err)
		}
		url := "agentmem:tools/" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tools: schema of %s: %w", t.Name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("tools: schema of %s: %w", t.Name, err)
		}
		out[t.Name] = s
	}
	return out, nil
})

var printer = message.NewPrinter(language.English)

// decodeArgs checks raw against tool name's schema and decodes it into v.
// Empty arguments are an empty object. A violation is a 400 *Error naming
// the argument as sent (e.g. messages[0].role).
func decodeArgs(name string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	schemas, err := compiled()
	if err != nil {
		return &Error{Code: 500, Message: err.Error()}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &Error{Code: 400, Field: "arguments", Message: "not JSON: " + err.Error()}
	}
	if err := schemas[name].Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return violation(ve)
		}
		return &Error{Code: 400, Field: "arguments", Message: err.Error()}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Code: 400, Field: "arguments", Message: err.Error()}
	}
	return nil
}

// violation turns the first innermost cause of a schema violation into an
// *Error naming the argument.
func violation(ve *jsonschema.ValidationError) *Error {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	path := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			path = append(path[:len(path):len(path)], k.Missing[0])
			return &Error{Code: 400, Field: fieldPath(path), Message: "is required"}
		}
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			path = append(path[:len(path):len(path)], k.Properties[0])
			return &Error{Code: 400, Field: fieldPath(path), Message: "is not an argument of this tool"}
		}
	}
	field := fieldPath(path)
	if field == "" {
		field = "arguments"
	}
	return &Error{Code: 400, Field: field, Message: ve.ErrorKind.LocalizedString(printer)}
}

// fieldPath writes a JSON location as a.b[0].c (the tools' schemas have no
// property named by digits, so a number is an array index).
func fieldPath(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}
