package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// The digest of a session: what happened and when, in the user's own
// words — a few of the user's most informative sentences, those no fact
// entry quotes first, in the order said, with the sitting's date and every
// relative date resolved in brackets ("my sister drove up on Saturday
// [2023-05-06]"). It is one episodic entry per session, so a later
// "when did I …" question finds the sitting and its date even when no
// rule read a fact.

const (
	// MaxDigestSentences bounds the sentences a digest quotes.
	MaxDigestSentences = 5
	// MaxDigestBytes bounds a digest's text.
	MaxDigestBytes = 1200
	// minDigestScore: a sentence scoring less says nothing worth keeping.
	minDigestScore = 4
	// minDigestSentences: a digest quotes a sentence a fact quotes already
	// only to hold this many.
	minDigestSentences = 2
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

// secondPersonRE: a sentence about the other speaker.
var secondPersonRE = regexp.MustCompile(`(?i)\b(?:you|your|yours|ya|u|ur|you're|you've)\b`)

// vocativeRE: a name the sentence addresses ("Wow Sam, …", "…, Priya!").
var (
	vocativeEndRE   = regexp.MustCompile(`, [A-Z][a-z]+([!.?]*)$`)
	vocativeStartRE = regexp.MustCompile(`^(?:(?:hey|hi|hello|wow|oh|thanks|thank you|yeah|yes|haha|omg|aw+|sorry|congrats|woah|whoa|ooh)[,!]? )+[A-Z][a-z]+[,!]? `)
)

// stripVocatives drops the names a sentence addresses, which say nothing
// of the user.
func stripVocatives(s string) string {
	s = vocativeStartRE.ReplaceAllString(s, "")
	return vocativeEndRE.ReplaceAllString(s, "$1")
}

// SessionDigest is the digest of msgs, false when the user said nothing
// worth keeping. It prefers what no fact of fs (the facts read from msgs)
// quotes already — a fact's entry has its sentence and date — and quotes
// one only to hold minDigestSentences; an episode's sentence (summarized
// with its kind) and a value the user took back later in the session are
// never in it.
func SessionDigest(msgs []Message, fs []Fact) (Digest, bool) {
	type cand struct {
		order  int
		text   string
		id     string
		score  int
		digest string
		quoted bool // a fact's entry quotes it already
	}
	quoted := map[string]bool{}
	never := map[string]bool{} // an episode's (summarized on its own), or a value taken back
	for i, f := range fs {
		st := normalize(f.Statement)
		quoted[st] = true
		if f.Type == Episodic {
			never[st] = true
		}
		for _, g := range fs[i+1:] {
			if g.Key() == f.Key() && (g.Correction || g.Retract) && !sameValue(f, g) {
				never[st] = true
			}
		}
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
			if isQuestion(s) || n < 4 || n > MaxContextWords || len(s) > maxSentenceBytes || never[s] {
				continue
			}
			bare := stripVocatives(s)
			if !firstPersonRE.MatchString(bare) || len(strings.Fields(bare)) < 5 {
				continue // about the other speaker, or a reaction
			}
			sc := facts.Score(bare, true, false, false)
			if sc == 0 {
				continue
			}
			if eventVerbRE.MatchString(trimLeading(s)) {
				sc += 4
			}
			if dr, ok := findDate(s, m.Said, isFuture(s)); ok && dr.words != "" {
				sc += 3
			}
			if secondPersonRE.MatchString(bare) {
				sc -= 4 // about the other speaker
			}
			if sc < minDigestScore {
				continue
			}
			cs = append(cs, cand{order: len(cs), text: s, id: m.ID, score: sc, digest: annotateDates(s, m.Said), quoted: quoted[s]})
		}
	}
	if len(cs) == 0 {
		return Digest{}, false
	}
	// What no fact quotes first; a quoted sentence only to reach
	// minDigestSentences.
	best := slices.Clone(cs)
	slices.SortStableFunc(best, func(a, b cand) int {
		if a.quoted != b.quoted {
			if a.quoted {
				return 1
			}
			return -1
		}
		return b.score - a.score
	})
	keep := map[int]bool{}
	size := 0
	for _, c := range best {
		if len(keep) == MaxDigestSentences || size+len(c.digest)+3 > MaxDigestBytes || (c.quoted && len(keep) >= minDigestSentences) {
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
