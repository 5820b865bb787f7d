package segmented

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// jsonLines returns a JSON object or array (a tool result, usually) as
// lines the summarizer can select from, in document order: "key: value"
// for each scalar (nested keys joined by "."), "key: a, b, c" for an array
// of scalars, and one line "key[i]: k=v, k=v" per element of an array of
// objects. ok is false when text is not one JSON object or array.
func jsonLines(text string) (lines []string, ok bool) {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	root, err := parseJSON(dec, 0)
	if err != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data
	}
	flattenJSON(root, "", &lines)
	return lines, true
}

// maxJSONDepth bounds the nesting parseJSON follows.
const maxJSONDepth = 32

// jnode is a parsed JSON value that keeps the order of object keys.
type jnode struct {
	kind   byte // 'o' object, 'a' array, 's' scalar
	scalar string
	keys   []string
	kids   []jnode
}

func parseJSON(dec *json.Decoder, depth int) (jnode, error) {
	if depth > maxJSONDepth {
		return jnode{}, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jnode{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := jnode{kind: 'o'}
		if t == '[' {
			n.kind = 'a'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return jnode{}, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			kid, err := parseJSON(dec, depth+1)
			if err != nil {
				return jnode{}, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return jnode{}, err
		}
		return n, nil
	case string:
		return jnode{kind: 's', scalar: t}, nil
	case nil:
		return jnode{kind: 's', scalar: "null"}, nil
	default:
		return jnode{kind: 's', scalar: fmt.Sprint(t)}, nil
	}
}

func flattenJSON(n jnode, prefix string, out *[]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch n.kind {
	case 's':
		if prefix == "" {
			*out = append(*out, n.scalar)
		} else {
			*out = append(*out, prefix+": "+n.scalar)
		}
	case 'o':
		for i, k := range n.keys {
			flattenJSON(n.kids[i], join(k), out)
		}
	case 'a':
		if allScalars(n.kids) {
			vals := make([]string, len(n.kids))
			for i, k := range n.kids {
				vals[i] = k.scalar
			}
			name := prefix
			if name == "" {
				name = "items"
			}
			*out = append(*out, name+": "+strings.Join(vals, ", "))
			return
		}
		for i, kid := range n.kids {
			var b bytes.Buffer
			var pairs []string
			flattenJSON(kid, "", &pairs)
			for j, p := range pairs {
				if j > 0 {
					b.WriteString(", ")
				}
				k, v, found := strings.Cut(p, ": ")
				if found {
					b.WriteString(k + "=" + v)
				} else {
					b.WriteString(p)
				}
			}
			*out = append(*out, fmt.Sprintf("%s[%d]: %s", strings.TrimPrefix(prefix, "."), i, b.String()))
		}
	}
}

func allScalars(ns []jnode) bool {
	for _, n := range ns {
		if n.kind != 's' {
			return false
		}
	}
	return true
}
