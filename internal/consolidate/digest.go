package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// The digest of a session: what happened and when, in the user's own
// words — a few of the user's most informative sentences, in the order
// said, with the sitting's date and every relative date resolved in
// brackets ("I went to a book fair yesterday [2023-05-07]"). It is
// one episodic entry per session, so a later "when did I …" question
// finds the sitting and its date even when no rule read a fact.

const (
	// MaxDigestSentences bounds the sentences a digest quotes.
	MaxDigestSentences = 5
	// MaxDigestBytes bounds a digest's text.
	MaxDigestBytes = 1200
	// minDigestScore: a sentence scoring less says nothing worth keeping.
	minDigestScore = 4
)

// Digest is a session's digest.
type Digest struct {
	Text string
	// First and Last are when the session's first and last messages were
	// said (Unix nanoseconds, 0 unknown).
	First, Last int64
	// MessageIDs are the messages its sentences were taken from, in order.
	MessageIDs []string
	Sentences  int
}

// eventVerbRE: a sentence telling what the user did or will do.
var eventVerbRE = regexp.MustCompile(`(?i)^(?:(?:so|and|but|well|oh|also|actually|just|finally|recently|yesterday|today|last \w+|this \w+),? )*(?:I|we|my \w+(?: \w+)?)(?:'ve|'m|'re| have| am| are| just| finally| recently| also| both| all| actually)* (?:went|joined|started|got|adopted|moved|finished|took|visited|bought|signed|launched|opened|won|lost|ran|made|painted|volunteered|attended|registered|enrolled|had|tried|decided|met|quit|left|passed|completed|booked|celebrated|organized|organised|hosted|built|wrote|learned|learnt|found|received|graduated|applied|started|began|created|planned|going|planning|starting|moving|getting|taking|headed|heading|flew|drove|hiked|gave|turned|been|done|did|spent)\b`)

// firstPersonRE: a sentence about the user.
var firstPersonRE = regexp.MustCompile(`\b(?:I|I'm|I've|I'd|I'll|[Mm]y|[Mm]e|[Ww]e|[Oo]ur|[Uu]s|[Ww]e're|[Ww]e've|[Mm]ine)\b`)

// vocativeRE: a name the sentence addresses ("Wow Sam, …", "…, Priya!").
var (
	vocativeEndRE   = regexp.MustCompile(`,? [A-Z][a-z]+([!.?]*)$`)
	vocativeStartRE = regexp.MustCompile(`^(?:(?:hey|hi|hello|wow|oh|thanks|thank you|yeah|yes|haha|omg|aw+|sorry|congrats|woah|whoa|ooh)[,!]? )+[A-Z][a-z]+[,!]? `)
)

// stripVocatives drops the names a sentence addresses, which say nothing
// of the user.
func stripVocatives(s string) string {
	s = vocativeStartRE.ReplaceAllString(s, "")
	return vocativeEndRE.ReplaceAllString(s, "$1")
}

// SessionDigest is the digest of msgs (the user's sentences scored; fs,
// the facts read from them, weigh in), false when the user said nothing
// worth keeping.
func SessionDigest(msgs []Message, fs []Fact) (Digest, bool) {
	type cand struct {
		order  int
		text   string
		id     string
		score  int
		digest string
	}
	stated := map[string]int{}
	for _, f := range fs {
		stated[normalize(f.Statement)]++
	}
	var d Digest
	var cs []cand
	for _, m := range msgs {
		if m.Said != 0 {
			if d.First == 0 || m.Said < d.First {
				d.First = m.Said
			}
			d.Last = max(d.Last, m.Said)
		}
		if !m.User {
			continue
		}
		for _, s := range facts.Sentences(codeRE.ReplaceAllString(m.Text, "\n")) {
			s = normalize(s)
			n := len(strings.Fields(s))
			if isQuestion(s) || n < 4 || n > MaxContextWords {
				continue
			}
			bare := stripVocatives(s)
			if !firstPersonRE.MatchString(bare) {
				continue // about the other speaker, or a reaction
			}
			sc := facts.Score(bare, true, false, false)
			if sc == 0 && stated[s] == 0 {
				continue
			}
			if eventVerbRE.MatchString(trimLeading(s)) {
				sc += 4
			}
			if dr, ok := findDate(s, m.Said, isFuture(s)); ok && dr.words != "" {
				sc += 3
			}
			sc += 3 * min(stated[s], 2)
			if strings.Contains(strings.ToLower(" "+bare+" "), " you") {
				sc -= 2 // about the other speaker
			}
			if sc < minDigestScore {
				continue
			}
			cs = append(cs, cand{order: len(cs), text: s, id: m.ID, score: sc, digest: annotateDates(s, m.Said)})
		}
	}
	if len(cs) == 0 {
		return Digest{}, false
	}
	best := slices.Clone(cs)
	slices.SortStableFunc(best, func(a, b cand) int { return b.score - a.score })
	keep := map[int]bool{}
	size := 0
	for _, c := range best {
		if len(keep) == MaxDigestSentences || size+len(c.digest)+3 > MaxDigestBytes {
			break
		}
		keep[c.order] = true
		size += len(c.digest) + 3
	}
	var b strings.Builder
	switch {
	case d.First == 0:
		b.WriteString("In this session the user said:")
	case Day(d.First) == Day(d.Last):
		b.WriteString("On " + Day(d.First) + " the user said:")
	default:
		b.WriteString("From " + Day(d.First) + " to " + Day(d.Last) + " the user said:")
	}
	for _, c := range cs {
		if !keep[c.order] {
			continue
		}
		b.WriteString(` "` + c.digest + `"`)
		if !slices.Contains(d.MessageIDs, c.id) {
			d.MessageIDs = append(d.MessageIDs, c.id)
		}
		d.Sentences++
	}
	d.Text = b.String()
	return d, true
}
