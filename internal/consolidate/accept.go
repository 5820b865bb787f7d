package consolidate

import (
	"regexp"
	"slices"
	"strings"
)

// What a rule's value may be, and the fact it makes: the checks that keep
// compliments, small talk and pronouns out, and the key and label of each
// kind of fact.

// acceptable reports whether v is a value of rule rl.
func (x *extractor) acceptable(rl *rule, v string, st *stmt) bool {
	if v == "" {
		return false
	}
	if rl.head != nil && !headOK(v, rl.head) && !(rl.attr == "job_title" && jobLike(v)) {
		if !(rl.attr == "went_to/%" && shapeName(v)) {
			return false
		}
	}
	if rl.attr == "job_title" && rl.head != nil {
		if w := strings.Fields(strings.ToLower(v)); len(w) > 1 && (evaluative[w[0]] || judgedAs[w[0]]) {
			return false // "I'm a terrible cook": a judgement, not a trade
		}
	}
	switch rl.name {
	case "like", "fan", "dislike", "prefer", "is-favorite", "keen":
		return likeable(v) && !x.knownName(v) && !x.reaction(v, st)
	case "go-ing":
		return !errands[strings.ToLower(v)]
	case "learning":
		return skill(v)
	case "habit":
		return eventObject(v) && bare(st.text, v)
	case "in-group":
		if headOK(v, set("team")) && workTeam(v) {
			return false // "the data engineering team": a team at work, no pastime
		}
		return len(strings.Fields(v)) > 1 || !genericGroups[strings.ToLower(v)]
	case "run-biz", "keep":
		return eventObject(v)
	case "has":
		return eventObject(v) && !shapeName(v) && !headOK(v, relations) && !headOK(v, animals) && !headOK(v, notPossession) && !notLikeable[headSlug(v)] &&
			!personHead(v) && !recurring(st.text, v)
	case "work-in":
		return !headOK(v, notWorkplace) && !evaluative[strings.ToLower(v)]
	case "rel-is-first":
		return !creeds[strings.ToLower(v)]
	case "person":
		return likeable(v) && !evaluative[strings.ToLower(v)] && !peopleKinds[strings.ToLower(v)]
	case "plan-ing":
		return headOK(v, occasions) && !headOK(v, notEvent)
	case "start-plan":
		return eventObject(v) && (headOK(v, occasions) || headOK(v, starts))
	case "did", "doing", "joined", "applied", "had":
		return eventObject(v)
	case "my-biz":
		// "my clothing store" is the user's own only where the sentence
		// speaks of running it ("… to grow the business"), not "my
		// favourite shop" or "my yoga studio" one goes to.
		w := strings.Fields(strings.ToLower(v))
		return len(w) == 2 && !notOwnBiz[w[0]] && ownBizRE.MatchString(st.text)
	case "lost-job-at":
		return orgName(v)
	case "started-ing":
		w := strings.Fields(strings.ToLower(v))
		// "I started running late"; "I started volunteering at …" the
		// volunteering rule reads
		return w[0] != "volunteering" && (len(w) < 2 || !notPastimeAfter[w[1]])
	case "been-ing": // "I've been knitting for sixty years": a pastime, not "working" or "waiting"
		w := strings.Fields(strings.ToLower(v))
		return len(w) == 1 && !notPastimeIng[w[0]]
	case "in-now": // "we moved, we're in Brookline now": a new home only where the sentence says so
		return movedRE.MatchString(st.text) && nowRE.MatchString(st.text)
	case "name-alone":
		// "I'm Ruth." names the user where people introduce themselves:
		// a greeting, or the other speaker's own introduction.
		lv := strings.ToLower(v)
		intro := greetRE.MatchString(st.m.Text) || (st.q != nil && introRE.MatchString(st.q.Text))
		return intro && !creeds[lv] && !notNameWords[lv] && !isDateWord(v) && !evaluative[lv] && !notAnswerNames[lv] &&
			!headOK(lv, relations) && !stateWords[lv]
	case "used-to-work": // a held employer is retracted, not kept as a former one too
		return orgName(v) && !x.heldEver("user", "employer", v)
	case "used-to-live":
		return !x.heldEver("user", "home_city", v)
	case "work-at", "new-job-at":
		return orgName(v) || workplaceRE.MatchString(" at a "+v)
	case "joined-org":
		return orgName(v) && (workContext.MatchString(st.m.Text) || strings.Contains(st.text, v+" as a") || strings.Contains(st.text, v+" as an"))
	case "at-now", "at-now-2":
		return orgName(v) && workContext.MatchString(st.m.Text)
	}
	return true
}

// ownBizRE: words of running a business of one's own.
var ownBizRE = regexp.MustCompile(`(?i)\b(?:customers|clients|grow(?:ing)? the business|my business|opened|opening|launched|launching|own|running|run|wholesalers|inventory|staff|employees|hiring|grand opening|open my|start(?:ing|ed)? my)\b`)

// notOwnBiz: words before a shop's kind that make it one the user goes
// to, not one the user runs.
var notOwnBiz = set(`favorite favourite local usual regular nearest old go-to yoga pilates barre coffee tattoo hair nail
neighborhood neighbourhood corner fave fav`)

// workTeamWords name a team at work.
var workTeamWords = set(`data engineering product design sales support dev devops ops research legal finance marketing
platform infrastructure security qa management leadership hr recruiting analytics backend frontend mobile web it
customer success accounts editorial content growth`)

// workTeam reports whether team v is one at work ("the data engineering
// team").
func workTeam(v string) bool {
	for _, w := range strings.Fields(strings.ToLower(v)) {
		if workTeamWords[w] || fields[w] {
			return true
		}
	}
	return false
}

// introRE: words of people introducing themselves.
var introRE = regexp.MustCompile(`(?i)\b(?:hi|hello|hey|welcome|nice to meet|pleasure to meet|my name is|introduce)\b|\bI(?:'m| am) [A-Z][a-z]+[,.!]`)

// notPastimeIng: what one has been doing for years that is no pastime.
var notPastimeIng = set(`working crying waiting thinking feeling trying looking going doing getting living struggling dealing
hoping planning saving wondering meaning dying dreaming teaching nursing studying married dating seeing using taking
sleeping eating paying renting staying commuting fighting suffering battling recovering healing praying managing`)

// movedRE: words of moving home.
var movedRE = regexp.MustCompile(`(?i)\b(?:moved|relocated|new place|new house|new apartment|new flat)\b`)

// greetRE: a greeting in the user's own message.
var greetRE = regexp.MustCompile(`(?i)\b(?:hi|hello|hey|welcome|nice to meet|pleasure to meet)\b`)

// stateWords are what "I'm …" says of a state, capitalized for emphasis
// ("I'm Done!").
var stateWords = set(`sorry done home back here there ready late early free out in off up down sick alright awake asleep
serious kidding joking starving hungry full broke stuck lost confused exhausted pregnant married single engaged retired
vegan vegetarian dead alive obsessed shook speechless`)

// notPastimeAfter: words after a gerund that make it no pastime ("running
// late", "running errands").
var notPastimeAfter = set(`late out low errands around away behind things over`)

// judgedAs: words that make "a … cook" a judgement, not a trade.
var judgedAs = set(`terrible awful horrible lousy decent bad natural born wannabe amateur failed lazy total complete
hopeless mediocre average pretty excellent better worse`)

// jobSuffixes end the name of a trade or a profession not listed
// ("cardiologist", "locksmith", "wheelwright").
var jobSuffixes = []string{"ologist", "ician", "iatrist", "smith", "wright", "monger", "grapher", "ist"}

// notJobs end like one but name a temper or a creed.
var notJobs = set(`optimist pessimist realist perfectionist minimalist idealist purist romanticist fatalist
perfectionists list playlist wishlist checklist twist wrist fist mist gist assist exist insist persist resist`)

// jobLike reports whether the last word of v ends as a trade's name.
func jobLike(v string) bool {
	w := strings.Fields(strings.ToLower(v))
	if len(w) == 0 || len(w) > 3 {
		return false
	}
	last := strings.Trim(w[len(w)-1], ".,!")
	if notJobs[last] {
		return false
	}
	for _, suf := range jobSuffixes {
		if strings.HasSuffix(last, suf) && len(last) > len(suf)+2 {
			return true
		}
	}
	return false
}

// occasions: what one sits, attends or takes part in on a date.
var occasions = set(`interview exam exams test tests appointment surgery operation recital concert game match race
competition audition performance show presentation flight wedding meeting party marathon half-marathon
course workshop conference festival gig tournament ceremony graduation exhibition fair triathlon 10k 5k
swim fun-run charity-walk`)

// starts: what one starts or finishes on a date ("I start my new job on
// Monday").
var starts = set(`job role position internship apprenticeship degree course school college university uni
training residency placement contract term semester chemo treatment therapy rehab maternity leave paternity leave
leave holiday vacation`)

// creeds: capitalized words "my wife is …" may end with that name no one
// ("My wife is Italian").
var creeds = set(`american british english irish scottish welsh french german italian spanish portuguese dutch
polish greek chinese japanese korean indian mexican canadian australian brazilian russian turkish swedish
norwegian danish finnish swiss austrian belgian catholic christian jewish muslim hindu buddhist sikh protestant
autistic deaf asian african european latina latino`)

// peopleKinds: "I'm a people person" or "a morning person" names no taste
// of a thing.
var peopleKinds = set(`people morning night glass lucky different good bad nice real normal private shy
family big huge`)

// genericGroups: a group named by its kind alone ("I'm on the team") may
// be the user's team at work; a kind named ("the football team") is a
// pastime.
var genericGroups = set(`team group club crew squad`)

// skill reports whether v is a skill one learns: a language or a proper
// name ("Portuguese", "Python"), a game, an instrument or a pastime, or
// an activity ("coding") — not a virtue ("patience").
func skill(v string) bool {
	if !eventObject(v) && !strings.HasSuffix(strings.ToLower(v), "ing") {
		return false
	}
	w := strings.Fields(v)
	last := strings.ToLower(w[len(w)-1])
	return isCap(w[0]) || headOK(v, hobbyWords) || headOK(v, pastimes) || (strings.HasSuffix(last, "ing") && len(last) > 5 && !notEvent[last])
}

// bare reports whether v follows its verb in s bare, with no article or
// possessive ("I bake bread", not "I paint my nails").
func bare(s, v string) bool {
	i := strings.Index(s, v)
	if i < 0 {
		return false
	}
	w := strings.Fields(s[:i])
	return len(w) == 0 || !npSkip[strings.ToLower(w[len(w)-1])]
}

// notPossession: what "I have a …" names that is no lasting possession:
// a passing state, a question, an event (read by the plan rules).
var notPossession = set(`question questions idea ideas feeling problem problems issue issues doubt point reason
suggestion request concern confession bond relationship connection passion need goal vision voice heart
soft spot love knack gift talent sense update story favor favour headache cold cough fever hangover quick look
go word minute second sec sneaking suspicion tendency habit theory dream nightmare crush meeting appointment
interview exam test date call deadline shift lesson class game match flight party plan plans lot bit
couple few chat talk laugh quiz exams tests allergy allergies set setup set-up surgery operation`)

// notWorkplace: what "I work in …" names that is no line of work.
var notWorkplace = set(`garden yard kitchen house home shed bed morning mornings evening evenings afternoon
afternoons dark silence shifts bursts batches peace quiet office spurts`)

// errands: outings one goes on that are no pastime ("I go shopping").
var errands = set(`shopping sightseeing exploring`)

// shapeName: capitalized words, a place or a name ("Paris", "the Grand
// Canyon").
func shapeName(v string) bool {
	c, _ := capitalized(v, kPlace)
	return c != "" && c == v
}

// orgName: an employer is a name ("Bright Path", "Acme Corp"), maybe
// with the kind of place it is ("Leeds city library"), not a place in
// town ("the gym").
func orgName(v string) bool {
	if loc := workplaceTailRE.FindStringIndex(v); loc != nil && loc[0] > 0 {
		v = v[:loc[0]]
	}
	return shapeName(v)
}

// workplaceTailRE is the kind of place at the end of an employer's name.
var workplaceTailRE = regexp.MustCompile(`(?: [a-z-]+){0,2} (?:` + workplaces + `)$`)

// workContext: a message about work.
var workContext = regexp.MustCompile(`(?i)\b(?:work|working|job|jobs|quit|left|hired|employer|company|firm|position|role|offer|colleagues|boss|office|career)\b`)

// notLikeable: what a compliment or a reaction is about, not a taste of
// the user's ("I love how you…", "I love that!", "love the thought,
// Nate", "I love your painting", "I love that pic").
var notLikeable = set(`thought thoughts idea ideas way pic pics picture pictures photo photos shot shots image view
views vibe vibes energy attitude spirit sound sounds look looks message story stories words word name advice support
quote quotes colors colours color colour feeling feelings mindset outlook perspective enthusiasm dedication passion
determination courage strength positivity kindness creativity work job effort progress plan plans update updates
news pov point tip tips theme themes detail details design designs style composition smell taste texture
flavor flavour suggestion suggestions reminder reminders family friends kids children son daughter husband
wife partner mom dad parents life time moment moments memories memory one ones everything stuff`)

// likeable reports whether v names a taste: a thing, an activity, a
// kind of food or music — not a pronoun, a compliment's object or a
// person (checked by np) and not a name alone (a vocative).
func likeable(v string) bool {
	w := strings.Fields(v)
	for _, x := range w {
		if notLikeable[strings.ToLower(x)] {
			return false
		}
	}
	if len(w) > 1 && isCap(w[len(w)-1]) && !isCap(w[0]) {
		return false // "the thought Nate": a vocative
	}
	switch strings.ToLower(w[0]) {
	case "going", "getting", "heading", "coming", "being", "doing", "having", "making", "seeing", "hearing", "watching",
		"reading", "talking", "chatting", "knowing", "spending", "taking", "sharing", "catching", "learning", "finding",
		"helping", "connecting", "supporting", "to":
		return false
	}
	return true
}

// knownName reports whether v is the name of a relative or pet ("I love
// Rex": a pet, not a taste).
func (x *extractor) knownName(v string) bool {
	_, ok := x.people[strings.ToLower(v)]
	return ok
}

// reaction reports whether a liking of v answers what the other speaker
// just showed or said without asking ("I love the colours!" after their
// painting): its words are theirs. An answer to a question ("Do you like
// jazz?" "I love jazz") is a taste.
func (x *extractor) reaction(v string, st *stmt) bool {
	if st.q == nil || strings.Contains(st.q.Text, "?") {
		return false
	}
	theirs := strings.ToLower(st.q.Text)
	for _, w := range strings.Fields(strings.ToLower(v)) {
		if len(w) > 2 && !stopWords[w] && !strings.Contains(theirs, strings.TrimRight(w, "s")) {
			return false
		}
	}
	return true
}

// eventObject: what "I started …", "I joined …" name must be a thing, not
// a feeling or a stretch of time.
func eventObject(v string) bool {
	w := strings.Fields(strings.ToLower(v))
	if strings.HasSuffix(w[0], "ing") && len(w[0]) > 4 && !headOK(v, groupWords) && !headOK(v, venues) && !headOK(v, starts) {
		return false // "I started feeling better", "I started thinking about …"
	}
	for _, x := range w {
		if notEvent[x] {
			return false
		}
	}
	return true
}

var notEvent = set(`feeling feelings day days week weeks month months year years time times while moment lot bit
thing things chance opportunity way idea sense idea conversation talk chat look glance break rest nap fun blast
laugh cry smile feedback support help advice love care attention notice note message call text reply email mind
courage confidence strength hope peace joy happiness sadness stress anxiety event events`)

// shape finishes f: its key segment, label and subject by rule.
func (x *extractor) shape(f *Fact, rl *rule, st *stmt, s string, loc []int) {
	v := f.Value
	if strings.Contains(f.Attribute, "%") {
		seg := headSlug(v)
		switch rl.name {
		case "allergic", "rel-allergic", "allergy-have", "avoid", "like", "fan", "dislike", "prefer", "speak", "injury", "tried", "is-favorite", "keen":
			seg = slug(v)
		case "plan", "decided":
			seg = topic(v)
		}
		if seg == "" || seg == "x" {
			f.Attribute = ""
			return
		}
		f.Attribute = strings.ReplaceAll(f.Attribute, "%", seg)
	}
	if strings.Contains(f.Attribute, "#") {
		t := topic(v)
		if t == "" {
			f.Attribute = ""
			return
		}
		f.Attribute = strings.ReplaceAll(f.Attribute, "#", t)
	}
	switch rl.name {
	case "went", "back-from", "visited":
		if shapeName(v) {
			f.Attribute = "trip/" + slug(v)
		}
		if rl.name == "back-from" {
			f.Label = "got back from"
		}
	case "did":
		verb := strings.ToLower(group(s, rl.re, loc, "attr"))
		f.Label = verb
		f.Attribute = slug(verb) + "/" + headSlug(v)
		switch {
		case (verb == "adopted" || verb == "got" || verb == "rescued" || verb == "welcomed") && headOK(v, animals):
			f.Attribute = "pet/" + headSlug(v)
		case verb == "got" && !headOK(v, gotWorthy), verb == "started" && headOK(v, set("job")),
			(verb == "started" || verb == "finished" || verb == "bought") && headOK(v, media):
			f.Attribute = "" // "I got the hang of it"; a new job is read by the job rules
		}
	case "applied":
		lead := strings.ToLower(appliedVerbRE.FindString(s[loc[0]:]))
		key := "applied"
		switch {
		case strings.Contains(lead, "accepted"):
			key = "accepted"
		case strings.Contains(lead, "mentored"):
			key = "mentored_by"
		case strings.Contains(lead, "call"):
			key = "call_from"
		}
		f.Label, f.Attribute = lead, key+"/"+headSlug(v)
	case "is-favorite":
		if a := group(s, rl.re, loc, "attr"); a != "" {
			f.Attribute = "favorite_" + slug(a)
		}
	case "went-ing":
		f.Label = "went"
		f.Attribute = "went/" + slug(v)
	case "had":
		f.Label = "had"
	case "run-biz":
		f.Label = "runs"
	case "teach":
		f.Label = "teaches"
	case "taught":
		f.Label = "taught"
	case "drive":
		f.Label = "drives a"
	case "has":
		f.Label = "has"
	case "doing":
		verb := strings.ToLower(group(s, rl.re, loc, "attr"))
		if headOK(v, set("trip vacation holiday getaway visit")) {
			f.Attribute = "" // read by the trip rules
			return
		}
		f.Label = "is " + verb
		f.Attribute = "plan/" + lemma(verb) + "_" + headSlug(v)
	case "decided":
		if m := s[loc[0]:loc[1]]; !strings.HasPrefix(strings.ToLower(m), "we") {
			f.Subject = "user" // "I decided to …" is the user's decision
		}
	case "plan", "have-event", "my-event", "married", "expecting", "plan-ing", "start-plan":
		f.Label = "plans to"
		if rl.name != "plan" && rl.name != "married" {
			f.Label = "has"
		}
		if rl.name == "start-plan" {
			f.Label = "starts"
		}
	case "moving":
		f.Value = v
		f.Label = "is moving to"
	case "tried":
		f.Value = strings.TrimSpace(st.said)
		if n := len(strings.Fields(st.said)); n > MaxInstructionWords {
			f.Value = verbPhrase(st.said)
		}
		f.Attribute = "tried/" + slug(triedTask(v))
	case "joined":
		f.Label = strings.ToLower(strings.TrimSpace(joinedVerbRE.FindString(s[loc[0]:])))
		switch {
		case f.Label == "":
			f.Label = "joined"
		case strings.HasPrefix(f.Label, "am ") || strings.HasPrefix(f.Label, "have been "):
			f.Label = "is " + strings.Fields(f.Label)[len(strings.Fields(f.Label))-1] // "is taking"
		}
	}
	if rl.typ == Semantic && f.Type == Semantic && strings.HasPrefix(f.Attribute, "hobby/") {
		f.Label = "hobby"
	}
}

// lemma is the verb of a progressive ("organizing" → "organize").
func lemma(verb string) string {
	w := strings.Fields(verb)[0]
	if l, ok := lemmas[w]; ok {
		return l
	}
	return slug(strings.TrimSuffix(w, "ing"))
}

var lemmas = map[string]string{"starting": "start", "opening": "open", "launching": "launch", "organizing": "organize",
	"organising": "organise", "hosting": "host", "building": "build", "writing": "write", "training": "train",
	"preparing": "prepare", "working": "work", "planning": "plan", "running": "run"}

// happenings: what "I had a …" names worth keeping — an event or a place
// one went to, or a turn of life.
var happenings = func() map[string]bool {
	out := set(`baby surgery operation accident miscarriage breakup break-up promotion raise scare setback fall`)
	for w := range venues {
		out[w] = true
	}
	return out
}()

// media: what one reads or watches; starting or finishing one is small
// talk, not an event worth keeping.
var media = set(`book books novel novels series show shows movie movies film films episode episodes season seasons
documentary audiobook chapter article magazine comic comics manga anime sitcom drama`)

// gotWorthy: what "I got a …" names worth keeping.
var gotWorthy = set(`job internship promotion tattoo tattoos place house apartment flat car degree scholarship award raise
bike motorcycle diploma certificate license licence`)

var appliedVerbRE = regexp.MustCompile(`(?i)\b(?:applied (?:to|for)|got accepted (?:to|for|into|at)|was accepted (?:to|for|into|at)|got mentored by|got a call from)`)

var joinedVerbRE = regexp.MustCompile(`(?i)\b(?:joined|signed up for|signed up to|enrolled in|registered for|started going to|started attending|became a member of|took|am taking|have been taking|am doing|started taking|finished)\b`)

// triedTask is what was tried: the words before its outcome ("restarting
// the router, but it didn't help" → "restarting the router").
func triedTask(v string) string {
	if loc := untilRE.FindStringIndex(v); loc != nil {
		v = v[:loc[0]]
	}
	w := strings.Fields(v)
	if len(w) > 6 {
		w = w[:6]
	}
	return strings.Join(w, " ")
}

// personHead: "a new head of data", "a new deputy principal" name a person
// by their role (whom a team has), no possession. The head is the word
// before "of", else the last.
func personHead(v string) bool {
	w := strings.Fields(strings.ToLower(v))
	head := w[len(w)-1]
	if i := slices.Index(w, "of"); i > 0 {
		head = w[i-1]
	}
	return jobs[head] || workPeople[head] || relations[head]
}

// workPeople are people by their place at work or in a group.
var workPeople = set(`head boss manager principal deputy director lead colleague coworker co-worker hire intern
supervisor teammate member client customer ceo cto cfo founder owner chair chairman president`)

// recurring: "we have a release every two weeks" is a team's routine, no
// possession: the value followed by "every".
func recurring(text, v string) bool {
	i := strings.Index(strings.ToLower(text), strings.ToLower(v))
	if i < 0 {
		return false
	}
	next := strings.Fields(text[i+len(v):])
	return len(next) > 0 && strings.EqualFold(next[0], "every")
}
