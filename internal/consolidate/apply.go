package consolidate

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Applying the rules: one match read into facts, its value, subject,
// date and key.

// rules applies every rule to st.
func (x *extractor) rules(st *stmt) {
	s := st.text
	lower := " " + strings.ToLower(s) + " "
	g := gatesOf(strings.ToLower(s), x)
	for ri := range rules {
		rl := &rules[ri]
		if !g.allow(rl) || !rl.mayMatch(lower) {
			continue
		}
		for _, loc := range rl.re.FindAllStringSubmatchIndex(s, -1) {
			x.apply(st, rl, loc)
		}
	}
	x.birthdays(st)
	x.namedList(st)
	x.teacher(st)
	x.lets(st)
}

// tidy orders the facts read from one sentence (from index n) as said,
// and drops what another fact of the sentence says better ("I got a new
// job at Spotify" names the employer; "got: new job" adds nothing).
func (x *extractor) tidy(n int) {
	fs := x.out[n:]
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].at < fs[j].at })
	work := false
	for _, f := range fs {
		work = work || (f.Subject == "user" && (f.Attribute == "employer" || f.Attribute == "job_title"))
	}
	if !work {
		return
	}
	keep := x.out[:n]
	for _, f := range fs {
		if f.Attribute == "got/job" || f.Attribute == "started/job" {
			continue
		}
		keep = append(keep, f)
	}
	x.out = keep
}

// group returns the text of rl's group name in a match, "" when unset.
func group(s string, re *regexp.Regexp, loc []int, name string) string {
	gi := re.SubexpIndex(name)
	if gi < 0 || loc[2*gi] < 0 {
		return ""
	}
	return s[loc[2*gi]:loc[2*gi+1]]
}

// apply reads one match of rule rl in st.
func (x *extractor) apply(st *stmt, rl *rule, loc []int) {
	s := st.text
	if (!rl.free && !anchored(s, loc[0])) || hedged(s, loc[0], rl.weak) {
		return
	}
	at := loc[2*rl.re.SubexpIndex("v")]
	rest := s[at:]
	if rl.name == "rel-named" && at >= 2 && s[at-2] == ',' && strings.HasSuffix(strings.ToLower(s[:loc[1]]), " and") {
		return // "my sister, Kim and I": a list, not a name
	}
	subject := rl.subj
	switch subject {
	case "person":
		subject = x.person(st, s, rl.re, loc)
	case "thing":
		subject = relSubject(group(s, rl.re, loc, "thing"))
	}
	if subject == "" || outsider(subject) {
		return
	}
	attr := rl.attr
	if a := group(s, rl.re, loc, "attr"); a != "" {
		attr = strings.ReplaceAll(attr, "@", slug(a))
		if strings.HasSuffix(attr, "_count") { // "my four doggies": the dogs
			attr = countWords.Replace(attr)
		}
	}
	var values []string
	valueEnd := at
	switch {
	case rl.name == "age" || rl.name == "rel-age" || rl.name == "count" || rl.name == "my-count" || rl.name == "age-adj":
		w := strings.Fields(rest)[0]
		if rl.name == "age-adj" { // "7-year-old"
			w, _, _ = strings.Cut(w, "-")
		}
		if n, err := strconv.Atoi(strings.TrimRight(w, ".,!;")); rl.name != "count" && rl.name != "my-count" && (err == nil && (n < 1 || n > 110)) {
			return
		}
		values = []string{strings.TrimRight(w, ".,!;")}
	case rl.name == "diet":
		values = []string{strings.ToLower(strings.Trim(strings.Fields(rest)[0], ".,!;"))}
		if m := twoWordDietRE.FindString(rest); m != "" {
			values = []string{strings.ToLower(m)} // "lactose intolerant", not "lactose"
		}
		if next := strings.Fields(rest); len(next) > 1 && dietNouns[strings.ToLower(strings.Trim(next[1], ".,!;"))] {
			return // "I'm a vegan food blogger"
		}
	case rl.name == "allergy-have":
		v := rest[:strings.Index(strings.ToLower(rest), " allerg")]
		if w := strings.ToLower(strings.Fields(v)[0]); w == "a" || w == "an" || w == "the" || w == "no" || w == "any" {
			return // "I have an allergy to kiwi": allergy-to reads it
		}
		values = []string{v}
	case rl.name == "as-hobby":
		if m := asHobbyRE.FindStringIndex(rest); m != nil {
			values = []string{rest[:m[0]]}
		}
	case rl.name == "job-bare" && !bareJob(rest):
		return // "I'm contacting landlords": a doing, not a job
	case rl.name == "car" && notCarWordRE.MatchString(s[loc[0]:at]):
		return // "I drive a tram in Lisbon": a place after the vehicle, not its make
	case rl.name == "pregnant":
		values = []string{"pregnant"}
	case rl.name == "married":
		values = []string{"get married"}
	case rl.name == "retired":
		values = []string{"retired"}
	case rl.name == "in-field":
		v, _ := np(rest)
		values = []string{v}
	case rl.name == "person": // "a tea person": tea
		values = []string{strings.Fields(rest)[0]}
	case rl.name == "my-attr" || rl.name == "deadline":
		if v := untilClause(rest); v != "" && len(strings.Fields(v)) <= 6 {
			values = []string{v}
		}
	case rl.name == "decided":
		if v := verbPhrase(rest); v != "" {
			values = []string{v}
			valueEnd = at + len(v)
		}
	case rl.name == "plan":
		if v := planPhrase(rest, st.m.Said); v != "" {
			values = []string{v}
			valueEnd = at + len(v)
		}
	case rl.name == "tried":
		values = []string{rest}
	case rl.name == "injury": // "my knee playing football": the knee
		w := strings.Fields(bodyPart(untilClause(rest)))
		if len(w) == 0 || len(w) > 3 {
			return
		}
		v, _ := np(strings.Join(w, " "))
		if v == "" && len(w) == 1 && bodyWords[strings.ToLower(strings.Trim(w[0], ".,!;"))] {
			v = strings.Trim(w[0], ".,!;") // "my back": a word np stops at
		}
		if v == "" {
			return
		}
		values = []string{v}
	case rl.list:
		values = splitList(rest)
		if len(values) > 0 && phrasalGerund(rest, values[0]) {
			return // "I love throwing on some music"
		}
		if len(values) == 1 && gerundWithObject(rest, values[0]) {
			if vp := verbPhrase(rest); vp != "" && len(strings.Fields(vp)) <= 5 {
				values = []string{vp} // "I love restoring old furniture"
			}
		}
	default:
		v, end := value(rest, rl.k)
		if attr == "employer" && v != "" {
			if w := workplaceKindRE.FindString(rest[end:]); w != "" {
				v, end = v+w, end+len(w)
			}
		}
		if v == "" && (rl.name == "work-at" || rl.name == "new-job-at") {
			if w := workplaceRE.FindStringSubmatch(" at " + rest); w != nil {
				v, end = w[1], len(w[0])-4 // "a part-time job at a print shop"
			}
		}
		if v == "" && rl.k != kNP && st.said == strings.ToLower(st.said) {
			v = placeAnswer(rest) // "i live in lisbon": typed all in lower case
			end = len(v)
		}
		if v == "" {
			return
		}
		values, valueEnd = []string{v}, at+end
	}
	clause := s[dateClauseStart(s, loc[0]):clauseEnd(s, max(valueEnd, at))]
	var date dateRef
	if !rl.noDate {
		date, _ = findDate(clause, st.m.Said, rl.needDate || rl.future || isFuture(clause))
	}
	if rl.needDate && date.words == "" && !(rl.name == "doing" && (trainingRE.MatchString(s[loc[0]:at]) || (startingRE.MatchString(s[loc[0]:at]) && anyHead(values, businesses)))) && !(rl.name == "did" && (lastingRE.MatchString(s[loc[0]:at]) || anyHead(values, animals))) {
		return // a plan names its date; training for one names the event; so does a passing event ("I bought a coffee"), not a pet got
	}
	before := len(x.out)
	for _, v := range values {
		v = strings.TrimSpace(v)
		if !x.acceptable(rl, v, st) {
			continue
		}
		if rl.derive != nil {
			if v = rl.derive(v); v == "" {
				continue
			}
		}
		subject := subject
		if attr == "name" && subject != "user" && subject != "we" {
			subject = x.named(subject, v, st)
		}
		f := Fact{Subject: subject, Attribute: attr, Value: v, Type: rl.typ, Confidence: rl.conf, Rule: rl.name,
			Date: date.date, When: date.words, at: loc[0]}
		x.shape(&f, rl, st, s, loc)
		if f.Attribute == "" {
			continue
		}
		x.add(st, f)
	}
	switch rl.name {
	case "job", "job-been", "work-as", "new-job-as", "teach":
		if len(x.out) > before { // the employer after a job read, not after "a regular at the gym"
			x.jobAt(st, s, valueEnd)
		}
	case "joined-org", "work-at", "new-job-at":
		x.jobAs(st, s, valueEnd)
	}
}

// twoWordDietRE: a diet named in two words.
var twoWordDietRE = regexp.MustCompile(`^(?i:lactose[- ]intolerant|gluten[- ]free|gluten[- ]intolerant)`)

// countWords name what is counted in one word ("doggies" are dogs).
var countWords = strings.NewReplacer("doggies_", "dogs_", "pups_", "dogs_", "grandkids_", "grandchildren_")

// asHobbyRE ends the pastime of "I started making jewelry as a hobby".
var asHobbyRE = regexp.MustCompile(`(?i) (?:as a hobby|for fun|as a side hustle)\b`)

// startingRE: starting a business of one's own ("I'm starting a dance
// studio") is a fact without its date.
var startingRE = regexp.MustCompile(`(?i)\b(?:starting|opening|launching)\b`)

// bodyWords are parts of the body that are words np stops at too.
var bodyWords = set(`back`)

// phrasalGerund reports whether rest starts with the gerund v of a
// phrasal verb ("throwing on some music", "checking out …"): v alone is
// not what is liked.
func phrasalGerund(rest, v string) bool {
	w := strings.Fields(rest)
	return len(w) > 1 && strings.EqualFold(w[0], v) && strings.HasSuffix(strings.ToLower(v), "ing") &&
		particles[strings.ToLower(strings.Trim(w[1], ".,!"))]
}

// gerundWithObject reports whether rest starts with the gerund v and its
// object ("restoring old furniture"): the phrase, not the gerund alone, is
// what is liked.
func gerundWithObject(rest, v string) bool {
	w := strings.Fields(rest)
	return len(w) > 1 && strings.EqualFold(w[0], v) && strings.HasSuffix(strings.ToLower(v), "ing") &&
		(possessives[strings.ToLower(w[1])] || npSkip[strings.ToLower(w[1])])
}

var particles = set(`on up out off down over back around away into through`)

// planPhrase is a plan's value: what is planned, its date left to the
// date ("going to a conference this month" → "go to a conference").
func planPhrase(rest string, said int64) string {
	v := verbPhrase(rest)
	if v == "" {
		return ""
	}
	if d, ok := findDate(v, said, true); ok && d.start > 0 {
		v = strings.TrimSpace(v[:d.start])
		v = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v, " on"), " in"), " for")
	}
	w := strings.Fields(v)
	if len(w) == 0 {
		return ""
	}
	if isCap(w[0]) {
		return "" // "I'm going to Japan": a trip
	}
	if npSkip[strings.ToLower(w[0])] {
		v = "go to " + v // "I'm going to a conference": a trip, not an intention
	}
	return v
}

// dateClauseStart is where the words a statement's date may be read from
// begin: its clause, and the clauses before it when they hold nothing but
// lead words and dates ("Last Friday, I went to …").
func dateClauseStart(s string, at int) int {
	if leadOnly(s[:at]) {
		return 0
	}
	return clauseStart(s, at)
}

// leadOnly reports whether s holds only lead words and dates.
func leadOnly(s string) bool {
	s = leadPhraseRE.ReplaceAllString(s, " ")
	for _, d := range findDates(s, 0, false) {
		s = s[:d.start] + strings.Repeat(" ", d.end-d.start) + s[d.end:]
	}
	for _, w := range strings.Fields(s) {
		if w = strings.ToLower(strings.Trim(w, ",.!-—–")); w != "" && !leadWords[w] {
			return false
		}
	}
	return true
}

// trainingRE: "training for" or "preparing for" names the event trained
// for ("I'm training for a half marathon"), a plan without its date.
var trainingRE = regexp.MustCompile(`(?i)\b(?:training|preparing) for\b`)

// anyHead reports whether one of vs ends in a word of set.
func anyHead(vs []string, set map[string]bool) bool {
	for _, v := range vs {
		if headOK(v, set) {
			return true
		}
	}
	return false
}

// lastingRE: the verbs of a past event that tells who the user is, dated
// or not ("I adopted a cat", "I graduated from Leeds").
var lastingRE = regexp.MustCompile(`(?i)\b(?:adopted|graduated from|launched|published|released|welcomed|volunteered at)\b`)

// dietNouns after a diet word make it no diet of the user's.
var dietNouns = set(`food recipe recipes restaurant restaurants place places option options dish dishes meal meals blogger chef cook diet`)

// untilClause is s up to its clause's end, trimmed.
func untilClause(s string) string {
	if loc := untilRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	return strings.TrimSpace(s)
}

var untilRE = regexp.MustCompile(`(?i)[,;!?()]|[.:](?:\s|$)|\s(?:and|but|because|so|since|which|though|although)\s`)

// verbPhrase is a decision's or a plan's value: up to the clause
// boundary, at most 8 words, a date kept ("ship on Friday").
func verbPhrase(s string) string {
	if loc := untilRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	w := strings.Fields(strings.TrimRight(s, "."))
	if len(w) > 8 {
		w = w[:8]
	}
	if len(w) == 0 || badStart[strings.ToLower(w[0])] || !valueLike(w) {
		return ""
	}
	return strings.Join(w, " ")
}

// jobAt reads "I'm a nurse at St Mary's": the employer after a job.
func (x *extractor) jobAt(st *stmt, s string, end int) {
	m := jobAtRE.FindStringIndex(s[end:])
	if m == nil || m[0] != 0 {
		return
	}
	v, _ := capitalized(s[end+m[1]:], kName)
	if v == "" {
		if w := workplaceRE.FindStringSubmatch(s[end:]); w != nil {
			v = w[1] // "a data analyst at a hospital"
		}
	}
	if v == "" {
		return
	}
	x.add(st, Fact{Subject: "user", Attribute: "employer", Value: v, Type: Semantic, Confidence: 0.75, Rule: "job-at"})
}

// jobAs reads "I joined Spotify as a data engineer": the job after an
// employer.
func (x *extractor) jobAs(st *stmt, s string, end int) {
	m := jobAsRE.FindStringIndex(s[end:])
	if m == nil {
		return
	}
	v, _ := np(s[end+m[1]:])
	if v == "" || !headOK(v, jobs) {
		return
	}
	x.add(st, Fact{Subject: "user", Attribute: "job_title", Value: v, Type: Semantic, Confidence: 0.75, Rule: "job-as"})
}

// workplaceRE: a place of work named by its kind ("at a law firm"; "at
// the county hospital" names one the rules do not read as a name).
// bareJob reports whether the words at the start of rest can be a job
// named without its article ("pharmacist", "head chef"): no verb form
// ending in -ing or -ed, and one person, not several ("landlords").
func bareJob(rest string) bool {
	w := strings.Fields(rest)
	if len(w) > 2 {
		w = w[:2]
	}
	for i, x := range w {
		x = strings.ToLower(strings.TrimRight(x, ".,!;:"))
		if strings.HasSuffix(x, "ing") || strings.HasSuffix(x, "ed") {
			return false
		}
		if i == len(w)-1 && strings.HasSuffix(x, "s") && !strings.HasSuffix(x, "ss") {
			return false
		}
	}
	return true
}

// notCarWordRE: words between "I drive a" and a name that make the name
// no car's.
var notCarWordRE = regexp.MustCompile(`(?i)\b(?:in|at|on|for|to|from|with|by|of|around|through|into|across|and|or|bus|tram|train|truck|lorry|taxi|cab|van|forklift|tractor|ambulance)\b`)

// workplaces are the kinds of place a job is at.
const workplaces = `hospital|school|bank|law firm|firm|clinic|office|library|bakery|cafe|café|restaurant|hotel|startup|company|agency|nonprofit|non-profit|university|college|dealership|pharmacy|museum|studio|factory|warehouse|lab|daycare|nursing home|care home|call center|call centre|supermarket|grocery store|bookstore|newspaper|print shop|shop|store|credit union|salon|gym|garage|bar|pub|church|theater|theatre|council|centre|center`

var workplaceRE = regexp.MustCompile(`^ (?:at|in) (?:a|an) ((?:[a-z-]+ ){0,2}(?:` + workplaces + `))\b`)

// workplaceKindRE reads the kind of place after an employer's name: "the
// Leeds city library" is the library, not the town.
var workplaceKindRE = regexp.MustCompile(`^( (?:[a-z-]+ ){0,2}(?:` + workplaces + `))\b`)

var jobAsRE = regexp.MustCompile(`^ as (?:an? |the )?`)

var jobAtRE = regexp.MustCompile(`^ (?:at|for|with) (?:(?:a|an|this|the) (?:[a-z]+ ){1,3}(?:called|named) |the )?`)
