package jsonbody

import (
	"bytes"
	"encoding/json"
)

// ChatShape rewrites a JSON ContextReply so its rendered messages are
// exactly what each chat API takes, as the MCP tools give them:
//
//   - rendered.openai: name, tool_calls and tool_call_id only on the
//     messages that have them (an empty name or tool_call_id is refused by
//     some APIs, an empty tool_calls array by others);
//   - rendered.anthropic: each content block carries its type's members
//     only — text {type, text}, tool_use {type, id, name, input},
//     tool_result {type, tool_use_id, content} — as the Messages API
//     refuses members a block type does not have.
//
// Every other field keeps its order and value.
func ChatShape(data []byte) []byte {
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	root, perr := p.value("", 0)
	if perr != nil {
		return data
	}
	obj, _ := root.(*jsonObject)
	if obj == nil {
		return data
	}
	r, _ := obj.vals["rendered"].(*jsonObject)
	if r == nil {
		return data
	}
	msgs, _ := r.vals["openai"].([]jsonValue)
	for _, mv := range msgs {
		m, _ := mv.(*jsonObject)
		if m == nil {
			continue
		}
		for _, k := range []string{"name", "tool_call_id"} {
			if v, ok := m.get(k); ok && v == "" {
				m.del(k)
			}
		}
		if v, ok := m.get("tool_calls"); ok {
			if a, _ := v.([]jsonValue); len(a) == 0 {
				m.del("tool_calls")
			}
		}
	}
	amsgs, _ := r.vals["anthropic"].([]jsonValue)
	for _, mv := range amsgs {
		m, _ := mv.(*jsonObject)
		if m == nil {
			continue
		}
		blocks, _ := m.vals["content"].([]jsonValue)
		for _, bv := range blocks {
			b, _ := bv.(*jsonObject)
			if b == nil {
				continue
			}
			typ, _ := b.vals["type"].(string)
			keep := anthropicBlockMembers[typ]
			for _, k := range append([]string(nil), b.keys...) {
				if k != "type" && !keep[k] {
					b.del(k)
				}
			}
			if _, ok := b.get("input"); typ == "tool_use" && !ok {
				b.set("input", &jsonObject{vals: map[string]jsonValue{}}) // the API wants an object, {} for none
			}
		}
	}
	var out bytes.Buffer
	writeJSON(&out, root)
	return out.Bytes()
}

// anthropicBlockMembers are the members of each Messages API content block
// type besides type itself.
var anthropicBlockMembers = map[string]map[string]bool{
	"text":        {"text": true},
	"tool_use":    {"id": true, "name": true, "input": true},
	"tool_result": {"tool_use_id": true, "content": true},
}
