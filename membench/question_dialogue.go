package membench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/dialoggen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// RunDialogueQuestions is the question mode on conversations read from a
// data set (LoadLoCoMo): each conversation is ingested whole into one
// session, one append per turn (speaker 0 as user messages, speaker 1 as
// assistant messages, each content prefixed with the speaker's name, said
// at its sitting's date), then every question is appended for good as a
// user message (as written, without a name) and the context read right
// after, beside the same baselines as the generated conversations. The
// answer column scores the gold answer's content words (every one in the
// context, as a word); cats are the categories in report order.
func RunDialogueQuestions(ctx context.Context, cfg QuestionConfig, ds []*Dialogue, source string, cats []string) (*QuestionReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var convs []*dialoggen.Conversation
	for _, d := range ds {
		if err := d.Validate(); err != nil {
			return nil, err
		}
		convs = append(convs, d.conversation())
	}
	var dcats []dialoggen.Category
	for _, c := range cats {
		dcats = append(dcats, dialoggen.Category(c))
	}
	answers := map[*dialoggen.Question][]string{}
	for _, c := range convs {
		for i := range c.Questions {
			answers[&c.Questions[i]] = answerWords(c.Questions[i].Answer)
		}
	}
	rep, err := runQuestions(ctx, cfg, convs, source, dcats, func(text string, qq *dialoggen.Question) bool {
		return hasWords(wordSet(text), answers[qq])
	})
	if err != nil {
		return nil, err
	}
	rep.AnswerNote = "every content word of the gold answer is a word of the context (the date of a time question too, as the data set writes it)."
	return rep, nil
}

// conversation is d as the question mode's driver takes a generated
// conversation: one message and one append per turn, the questions after
// the last turn with their evidence as message indexes. Needs are the gold
// answer's content words as written (the "where the evidence went" table
// looks for them in summaries).
func (d *Dialogue) conversation() *dialoggen.Conversation {
	c := &dialoggen.Conversation{
		Speakers:     d.Speakers,
		SystemPrompt: fmt.Sprintf("You are %s, chatting with your friend %s. Keep track of what you both share; answer from the conversation.", d.Speakers[1], d.Speakers[0]),
	}
	c.Config.StartUnixNano = d.Sittings[0].UnixNano
	byID := map[string]int{}
	for s, st := range d.Sittings {
		start := len(c.Messages)
		for i := range st.Turns {
			t := &st.Turns[i]
			role := memoryv1.Role_ROLE_USER
			if t.Speaker == 1 {
				role = memoryv1.Role_ROLE_ASSISTANT
			}
			byID[t.ID] = len(c.Messages)
			c.Appends = append(c.Appends, dialoggen.Span{Start: len(c.Messages), End: len(c.Messages) + 1})
			c.Messages = append(c.Messages, dialoggen.Message{Index: len(c.Messages), Sitting: s, Speaker: t.Speaker, Role: role,
				Content: d.Content(t), UnixNano: d.TurnTime(s, i)})
		}
		c.Sittings = append(c.Sittings, dialoggen.Sitting{Span: dialoggen.Span{Start: start, End: len(c.Messages)},
			UnixNano: st.UnixNano, DateForms: dateForms(st.UnixNano)})
	}
	for i, q := range d.Questions {
		qq := dialoggen.Question{ID: fmt.Sprintf("%s-q%d", d.Name, i), Category: dialoggen.Category(q.Category), Text: q.Text,
			At: len(c.Messages), Answer: q.Answer}
		for _, e := range q.Evidence {
			qq.Evidence = append(qq.Evidence, byID[e])
		}
		slices.Sort(qq.Evidence)
		for _, w := range strings.Fields(q.Answer) {
			if len(answerWords(w)) > 0 {
				qq.Needs = append(qq.Needs, []string{strings.Trim(w, ".,;:!?\"'()")})
			}
		}
		c.Questions = append(c.Questions, qq)
	}
	return c
}
