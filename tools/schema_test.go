package tools_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentmem/agentmem/tools"
)

// Every tool's input schema is a valid JSON Schema draft 2020-12 document
// (checked against the draft's meta-schema), an object schema, and compiles.
func TestSchemasAreDraft202012(t *testing.T) {
	c := jsonschema.NewCompiler()
	meta, err := c.Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.All() {
		if names[tool.Name] {
			t.Errorf("%s: listed twice", tool.Name)
		}
		names[tool.Name] = true
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.InputSchema))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if err := meta.Validate(doc); err != nil {
			t.Errorf("%s: not a draft 2020-12 schema: %v", tool.Name, err)
		}
		c2 := jsonschema.NewCompiler()
		c2.DefaultDraft(jsonschema.Draft2020)
		if err := c2.AddResource("t.json", doc); err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Compile("t.json"); err != nil {
			t.Errorf("%s: does not compile: %v", tool.Name, err)
		}
		var top struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &top); err != nil {
			t.Fatal(err)
		}
		if top.Type != "object" {
			t.Errorf("%s: type %q, want object", tool.Name, top.Type)
		}
		for _, r := range top.Required {
			if _, ok := top.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name, r)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		if _, ok := tools.Lookup(tool.Name); !ok {
			t.Errorf("%s: Lookup misses it", tool.Name)
		}
	}
	for _, want := range []string{"session_append", "session_context", "recall_conversation", "search_conversation",
		"clear_recalled_context", "memory_read", "memory_write", "memory_list", "memory_search", "memory_history"} {
		if !names[want] {
			t.Errorf("no tool %s", want)
		}
	}
}

// The OpenAI and Anthropic exports carry the same tools, in the shapes
// those APIs document, with the same schemas.
func TestExportShapes(t *testing.T) {
	all := tools.All()
	var openai []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	var anthropic []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	roundTrip(t, tools.OpenAI(), &openai)
	roundTrip(t, tools.Anthropic(), &anthropic)
	if len(openai) != len(all) || len(anthropic) != len(all) {
		t.Fatalf("%d tools, %d openai, %d anthropic", len(all), len(openai), len(anthropic))
	}
	for i, tool := range all {
		o, a := openai[i], anthropic[i]
		if o.Type != "function" || o.Function.Name != tool.Name || o.Function.Description != tool.Description ||
			!bytes.Equal(o.Function.Parameters, tool.InputSchema) {
			t.Errorf("openai %d: %+v", i, o)
		}
		if a.Name != tool.Name || a.Description != tool.Description || !bytes.Equal(a.InputSchema, tool.InputSchema) {
			t.Errorf("anthropic %d: %+v", i, a)
		}
	}
}

func roundTrip(t *testing.T, v, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}
