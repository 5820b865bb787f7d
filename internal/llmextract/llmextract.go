// Package llmextract extracts facts for consolidation with an
// OpenAI-compatible chat endpoint (the node's --llm-* settings). The answer
// is checked before it is used: every fact must cite user messages of the
// conversation and hold words of them, so an endpoint that invents facts
// or answers nonsense yields nothing, and the caller falls back to the
// deterministic extractor (consolidate.Extract) on any error. It runs
// beside the actors, like every consolidation; its outcome is stored as
// entry writes, so replay never calls the endpoint.
package llmextract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/facts"
)

// ErrAnswer is returned (wrapped) when the endpoint's answer is unusable.
var ErrAnswer = errors.New("llmextract: unusable answer")

// Chat is the endpoint (llmsummary.Client.Chat).
type Chat interface {
	Chat(ctx context.Context, system, user string, maxTokens int) (string, error)
}

// Extractor extracts facts with Chat.
type Extractor struct {
	Chat Chat
	// MaxMessages bounds the user messages sent (the newest); 0 = 200.
	MaxMessages int
}

// Instruction is the system prompt.
const Instruction = `You extract durable facts about the user from a conversation, for long-term memory.
Read only what the USER states about themselves, their family, pets, plans and preferences, and decisions they make.
Skip questions, hypotheticals, small talk and anything the assistant says.
Answer with JSON only: {"facts":[{"subject":"user","attribute":"home_city","value":"Porto","type":"semantic","confidence":0.9,"message_ids":["m1"],"replaces":""}]}
subject: "user", "we" (decisions) or a relation such as "daughter"; attribute: snake_case; type: semantic, episodic (something tried and how it ended) or procedural (an instruction to the assistant);
replaces: the earlier value when the user corrects one. Known facts are listed; a correction of one keeps its subject and attribute.`

type answer struct {
	Facts []struct {
		Subject    string   `json:"subject"`
		Attribute  string   `json:"attribute"`
		Value      string   `json:"value"`
		Type       string   `json:"type"`
		Confidence float64  `json:"confidence"`
		MessageIDs []string `json:"message_ids"`
		Replaces   string   `json:"replaces"`
	} `json:"facts"`
}

// ExtractFacts implements consolidation.Extractor.
func (e Extractor) ExtractFacts(ctx context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, string, error) {
	maxMsgs := e.MaxMessages
	if maxMsgs <= 0 {
		maxMsgs = 200
	}
	byID := map[string]consolidate.Message{}
	var b strings.Builder
	for _, k := range known {
		fmt.Fprintf(&b, "known: %s/%s = %s\n", k.Subject, k.Attribute, k.Value)
	}
	var users []consolidate.Message
	for _, m := range msgs {
		if m.User {
			users = append(users, m)
		}
	}
	if len(users) > maxMsgs {
		users = users[len(users)-maxMsgs:]
	}
	if len(users) == 0 {
		return nil, "llm", nil
	}
	for _, m := range users {
		byID[m.ID] = m
		fmt.Fprintf(&b, "[%s] USER: %s\n", m.ID, m.Text)
	}
	out, err := e.Chat.Chat(ctx, Instruction, b.String(), 2000)
	if err != nil {
		return nil, "llm", err
	}
	facts, err := parse(out, byID)
	return facts, "llm", err
}

// parse reads the answer: a fact must cite user messages, share a content
// word with them, and name a subject, an attribute and a value.
func parse(out string, byID map[string]consolidate.Message) ([]consolidate.Fact, error) {
	out = strings.TrimSpace(out)
	out = strings.TrimPrefix(strings.TrimPrefix(out, "```json"), "```")
	out = strings.TrimSuffix(strings.TrimSpace(out), "```")
	var a answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAnswer, err)
	}
	var fs []consolidate.Fact
	for _, f := range a.Facts {
		subject, attr := key(f.Subject), key(f.Attribute)
		value := strings.TrimSpace(f.Value)
		if subject == "" || attr == "" || value == "" || len(value) > 300 || len(f.MessageIDs) == 0 {
			continue
		}
		var src []string
		var seq uint64
		grounded := false
		words := facts.ContentWords(value)
		for _, id := range f.MessageIDs {
			m, ok := byID[id]
			if !ok {
				continue
			}
			src = append(src, id)
			seq = max(seq, m.Seq)
			mw := facts.ContentWords(m.Text)
			for w := range words {
				if mw[w] {
					grounded = true
				}
			}
		}
		if len(src) == 0 || !grounded {
			continue // cites no user message, or states nothing they said
		}
		t := consolidate.Semantic
		switch f.Type {
		case "episodic":
			t = consolidate.Episodic
		case "procedural":
			t = consolidate.Procedural
		}
		conf := f.Confidence
		if conf <= 0 || conf > 1 {
			conf = 0.7
		}
		ctxText := strings.Fields(byID[src[0]].Text)
		if len(ctxText) > consolidate.MaxContextWords {
			ctxText = append(ctxText[:consolidate.MaxContextWords], "…")
		}
		fs = append(fs, consolidate.Fact{Subject: subject, Attribute: attr, Value: value, Type: t, Confidence: conf,
			Correction: f.Replaces != "", Replaces: f.Replaces, MessageIDs: src, Seq: seq, Rule: "llm",
			Statement: byID[src[0]].Text, Context: strings.Join(ctxText, " ")})
	}
	if len(a.Facts) > 0 && len(fs) == 0 {
		return nil, fmt.Errorf("%w: no fact cites a user message it is grounded in", ErrAnswer)
	}
	return fs, nil
}

// key returns s as a key path: lower-case segments of letters, digits and
// '_', joined by '/', at most 3 segments of 48 bytes.
func key(s string) string {
	var segs []string
	for _, seg := range strings.Split(strings.ToLower(s), "/") {
		var b strings.Builder
		for _, r := range seg {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				b.WriteRune(r)
			case r == '_' || r == ' ' || r == '-':
				if b.Len() > 0 {
					b.WriteByte('_')
				}
			}
			if b.Len() >= 48 {
				break
			}
		}
		if t := strings.Trim(b.String(), "_"); t != "" {
			segs = append(segs, t)
		}
	}
	if len(segs) > 3 {
		segs = segs[:3]
	}
	return strings.Join(segs, "/")
}
