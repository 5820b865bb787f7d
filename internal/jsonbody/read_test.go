package jsonbody

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// FuzzRead: Read never panics, and what it accepts protojson
// decodes (so a JSON body is never refused with the field-less "body"
// error after Read passed it), into the same message whichever
// spelling was sent.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		`{"command_id":"c","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]}`,
		`{"messages":[{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"x"}]}]}`,
		`{"messages":[{"role":2,"said_unix_nano":"123","content":"\u00e9"}]}`,
		`{"messages":[{"role":"ROLE_USER","toolCalls":[],"dataRef":{"size":"5","metadata":{"k":"v"}}}]}`,
		`{"messages":[`, `[]`, `null`, ``, `{"messages":[{"said_unix_nano":1e3}]}`,
		`{"messages":[{"said_unix_nano":1e999999999}]}`,
		`{"messages":[{"role":"tool","content":[{"type":"text","text":"a"},"b"]}]}`,
		`{"set_fact":{"key":"k","value":"v"},"remove_tool":null}`,
		`{"key":"k","value":"aGk=","metadata":{"a":"b"},"expected_version":"0","importance":0.5,"memory_type":"episodic"}`,
		`{"data":"aGk","ttl_seconds":"NaN"}`,
	} {
		f.Add([]byte(seed))
	}
	// Each body is read as each of these requests (the append's shapes, a
	// oneof, maps, bytes, optional and floats).
	types := []proto.Message{&memoryv1.AppendRequest{}, &memoryv1.KernelRequest{}, &memoryv1.CreateSessionRequest{},
		&memoryv1.PutEntryRequest{}, &memoryv1.PutDataRequest{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range types {
			req := typ.ProtoReflect().New().Interface()
			text, jerr := Read(data, req.ProtoReflect().Descriptor())
			if jerr != nil {
				if jerr.Field == "" {
					t.Fatalf("error without a field: %+v", jerr)
				}
				continue
			}
			if err := jsonIn.Unmarshal(text, req); err != nil {
				t.Fatalf("Read accepted %q as %q (%T), protojson refuses it: %v", data, text, req, err)
			}
			// Normalizing is idempotent: the rewritten text reads as the same message.
			text2, jerr := Read(text, req.ProtoReflect().Descriptor())
			if jerr != nil {
				t.Fatalf("rewritten %q refused: %v", text, jerr)
			}
			again := typ.ProtoReflect().New().Interface()
			if err := jsonIn.Unmarshal(text2, again); err != nil || !proto.Equal(req, again) {
				t.Fatalf("rewritten %q reads as %v, first %v (%v)", text, again, req, err)
			}
		}
	})
}

// BenchmarkRead compares reading an OpenAI-shaped append body through
// Read then protojson (what the service does) with protojson alone on the
// equivalent canonical body.
func BenchmarkRead(b *testing.B) {
	openai := []byte(`{"command_id":"turn-1","messages":[
		{"role":"user","content":"what is the weather in Paris and in Rome, and which is warmer today?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"18C, sunny, light wind from the west"},
		{"role":"tool","tool_call_id":"call_2","content":"24C, clear"},
		{"role":"assistant","content":"Rome is warmer today: 24C against 18C in Paris."}]}`)
	md := (&memoryv1.AppendRequest{}).ProtoReflect().Descriptor()
	read := func(data []byte) {
		text, jerr := Read(data, md)
		if jerr != nil {
			b.Fatal(jerr)
		}
		var req memoryv1.AppendRequest
		if err := jsonIn.Unmarshal(text, &req); err != nil {
			b.Fatal(err)
		}
	}
	text, _ := Read(openai, md)
	b.Run("Read+protojson", func(b *testing.B) {
		b.SetBytes(int64(len(openai)))
		for b.Loop() {
			read(openai)
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			var req memoryv1.AppendRequest
			if err := jsonIn.Unmarshal(text, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// jsonIn decodes what Read returns, as the service does.
var jsonIn = protojson.UnmarshalOptions{}

// TestReadJSONOpenAIReplyMembers: a message as an OpenAI reply carries it
// is read whole: a refusal or an audio transcript becomes the content when
// there is none, annotations are not stored, developer is system; members
// of the wrong type name their field.
func TestReadJSONOpenAIReplyMembers(t *testing.T) {
	md := (&memoryv1.AppendRequest{}).ProtoReflect().Descriptor()
	for _, c := range []struct {
		body, content string
		role          memoryv1.Role
		field         string
	}{
		{`{"messages":[{"role":"assistant","content":null,"refusal":"I can't help with that.","annotations":[]}]}`, "I can't help with that.", memoryv1.Role_ROLE_ASSISTANT, ""},
		{`{"messages":[{"role":"assistant","content":"Paris.","refusal":null,"annotations":[{"type":"url_citation","url_citation":{"url":"https://example.org","start_index":0,"end_index":5}}]}]}`, "Paris.", memoryv1.Role_ROLE_ASSISTANT, ""},
		{`{"messages":[{"role":"assistant","content":null,"audio":{"id":"a1","data":"","expires_at":1,"transcript":"Hello there."}}]}`, "Hello there.", memoryv1.Role_ROLE_ASSISTANT, ""},
		{`{"messages":[{"role":"developer","content":"Answer in French."}]}`, "Answer in French.", memoryv1.Role_ROLE_SYSTEM, ""},
		{`{"messages":[{"role":"assistant","refusal":7}]}`, "", 0, "messages[0].refusal"},
		{`{"messages":[{"role":"assistant","content":"x","annotations":{}}]}`, "", 0, "messages[0].annotations"},
		{`{"messages":[{"role":"assistant","content":"x","audio":"a"}]}`, "", 0, "messages[0].audio"},
	} {
		text, jerr := Read([]byte(c.body), md)
		if c.field != "" {
			if jerr == nil || jerr.Field != c.field {
				t.Errorf("%s: %v, want an error on %s", c.body, jerr, c.field)
			}
			continue
		}
		req := &memoryv1.AppendRequest{}
		if jerr != nil || jsonIn.Unmarshal(text, req) != nil {
			t.Fatalf("%s: %v", c.body, jerr)
		}
		m := req.GetMessages()[0]
		if m.GetContent() != c.content || m.GetRole() != c.role {
			t.Errorf("%s: read as %v", c.body, m)
		}
	}
}
