package consolidate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dates: a statement's date phrase ("yesterday", "last Tuesday", "two
// years ago", "next month", "in June", "on March 3rd") resolved against
// when the statement was said into an absolute date, so that an entry
// read months later still says when:
//
//	"yesterday", said 2023-05-08      → 2023-05-07
//	"last week"                       → the week of 2023-05-01 (its Monday)
//	"last weekend"                    → the weekend of 2023-05-06 (its Saturday)
//	"two years ago"                   → 2021
//	"next month"                      → 2023-06
//	"in June" (past tense)            → 2022-06; (future) → 2023-06
//	"on Friday" (past tense)          → the Friday before; (future) the one after
//	"March 3rd, 2021"                 → 2021-03-03 (a year given needs no said time)
//
// A phrase that names no one date ("a few days ago", "recently") is found
// but not resolved. Without a said time only dates with a year resolve.

// dateRef is a date phrase of a text and what it resolves to.
type dateRef struct {
	start, end int    // the phrase's byte offsets in the text
	words      string // the phrase
	date       string // resolved ("" when it names no one date, or no said time)
}

var (
	weekdays = map[string]time.Weekday{"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
		"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday, "sunday": time.Sunday,
		"mon": time.Monday, "tue": time.Tuesday, "tues": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday,
		"thurs": time.Thursday, "fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday}
	months = map[string]time.Month{"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
		"august": 8, "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3,
		"apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12}
	counts = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
		"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a couple": 2}
)

const (
	// "sat", "sun", "wed" and "mon" are words too: only the full names and
	// the abbreviations no other word spells.
	weekdayAlt = `monday|tuesday|wednesday|thursday|friday|saturday|sunday|tues|thurs|fri`
	// A month is capitalized ("march", "may" are words too), or one of
	// the names no other word spells.
	monthAlt = `(?:January|February|March|April|May|June|July|August|September|October|November|December|` +
		`Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec|january|february|april|june|july|august|september|october|november|december)`
	countAlt = `\d{1,3}|a couple of|couple of|a couple|a few|few|several|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve`
)

// datePatterns, each with a resolver; the earliest match in a text wins
// (the longest at one position).
var datePatterns = []struct {
	re      *regexp.Regexp
	resolve func(m []string, now time.Time, future bool) string
}{
	{regexp.MustCompile(`(?i)\bthe day before yesterday\b`), func(_ []string, now time.Time, _ bool) string { return day(now.AddDate(0, 0, -2)) }},
	{regexp.MustCompile(`(?i)\b(yesterday|last night|today|tonight|this (?:morning|afternoon|evening)|earlier today|tomorrow)\b`), func(m []string, now time.Time, _ bool) string {
		switch strings.ToLower(m[1]) {
		case "yesterday", "last night":
			return day(now.AddDate(0, 0, -1))
		case "tomorrow":
			return day(now.AddDate(0, 0, 1))
		}
		return day(now)
	}},
	{regexp.MustCompile(`(?i)\b(` + countAlt + `) (day|week|month|year)s? ago\b`), func(m []string, now time.Time, _ bool) string {
		n, ok := count(m[1])
		if !ok {
			return ""
		}
		return shift(now, m[2], -n)
	}},
	{regexp.MustCompile(`(?i)\bin (` + countAlt + `) (day|week|month|year)s?(?: time)?\b`), func(m []string, now time.Time, _ bool) string {
		n, ok := count(m[1])
		if !ok {
			return ""
		}
		return shift(now, m[2], n)
	}},
	{regexp.MustCompile(`(?i)\b(last|this|next|past) (week|weekend|month|year)\b`), func(m []string, now time.Time, future bool) string {
		n := 0
		switch strings.ToLower(m[1]) {
		case "last", "past":
			n = -1
		case "next":
			n = 1
		}
		if strings.EqualFold(m[2], "weekend") {
			return weekendOf(now, n, future)
		}
		return shift(now, m[2], n)
	}},
	{regexp.MustCompile(`(?i)\b(last|this|next) (summer|winter|spring|fall|autumn)\b`), func(m []string, now time.Time, _ bool) string {
		return season(now, strings.ToLower(m[2]), strings.ToLower(m[1]))
	}},
	{regexp.MustCompile(`(?i)\b(?:(last|this|next|on|this coming|this past) )?(` + weekdayAlt + `)\b\.?`), func(m []string, now time.Time, future bool) string {
		wd := weekdays[strings.ToLower(m[2])]
		switch strings.ToLower(m[1]) {
		case "last", "this past":
			return day(weekdayBefore(now, wd, false))
		case "next", "this coming":
			return day(weekdayAfter(now, wd, false))
		case "this":
			if future {
				return day(weekdayAfter(now, wd, true))
			}
			return day(weekdayBefore(now, wd, true))
		}
		if future {
			return day(weekdayAfter(now, wd, false))
		}
		return day(weekdayBefore(now, wd, false))
	}},
	// "March 3rd, 2023", "March 3", "3 March 2023", "3rd of March".
	{regexp.MustCompile(`\b(` + monthAlt + `)\.? (\d{1,2})(?:st|nd|rd|th)?\b(?:,? (\d{4})\b)?`), func(m []string, now time.Time, future bool) string {
		return monthDay(now, m[1], m[2], m[3], future)
	}},
	{regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?(` + monthAlt + `)\b(?:,? (\d{4})\b)?`), func(m []string, now time.Time, future bool) string {
		return monthDay(now, m[2], m[1], m[3], future)
	}},
	// "last June", "in June", "June 2023".
	{regexp.MustCompile(`\b(?:(last|next|this|in|since|by|until|of|early|late|mid|mid-) )?(` + monthAlt + `)\b(?:,? (\d{4})\b)?`), func(m []string, now time.Time, future bool) string {
		return month(now, strings.ToLower(m[1]), m[2], m[3], future)
	}},
	{regexp.MustCompile(`\b(?:(?:in|since|back in|from) )((?:19|20)\d\d)\b`), func(m []string, _ time.Time, _ bool) string { return m[1] }},
	{regexp.MustCompile(`(?i)\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b`), func(m []string, _ time.Time, _ bool) string {
		if _, err := time.Parse(time.DateOnly, m[0]); err != nil {
			return ""
		}
		return m[0]
	}},
}

// findDate returns the first date phrase of s, resolved against said
// (Unix nanoseconds; 0: unknown). future: the statement speaks of what is
// to come ("on Friday" is the next Friday, not the last).
func findDate(s string, said int64, future bool) (dateRef, bool) {
	best := dateRef{start: -1}
	for _, p := range datePatterns {
		loc := p.re.FindStringSubmatchIndex(s)
		if loc == nil || (best.start >= 0 && (loc[0] > best.start || (loc[0] == best.start && loc[1] <= best.end))) {
			continue
		}
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[loc[2*i]:loc[2*i+1]]
			}
		}
		if !plausibleMonth(s, loc[0], m[0]) {
			continue
		}
		best = dateRef{start: loc[0], end: loc[1], words: strings.TrimRight(m[0], ".")}
		best.end = best.start + len(best.words)
		switch {
		case said != 0:
			best.date = p.resolve(m, time.Unix(0, said).UTC(), future)
		default: // only a date with its year
			if d := p.resolve(m, time.Time{}, future); strings.HasPrefix(d, "19") || strings.HasPrefix(d, "20") {
				best.date = d
			}
		}
	}
	return best, best.start >= 0
}

// findDates returns the date phrases of s, in order.
func findDates(s string, said int64, future bool) []dateRef {
	var out []dateRef
	for off := 0; off < len(s); {
		d, ok := findDate(s[off:], said, future)
		if !ok {
			break
		}
		d.start += off
		d.end += off
		out = append(out, d)
		off = d.end
	}
	return out
}

// plausibleMonth rejects "may" and "march" as verbs: a month alone is a
// month after a preposition or when capitalized mid-sentence.
func plausibleMonth(s string, at int, phrase string) bool {
	w := strings.Fields(phrase)
	if len(w) == 0 {
		return false
	}
	first := strings.ToLower(strings.TrimRight(w[0], "."))
	if first != "may" && first != "march" {
		return true
	}
	if len(w) > 1 {
		return true // "May 3", "March 2023"
	}
	if w[0] == "May" || w[0] == "March" {
		return at > 0 // a capital at the sentence's start says nothing
	}
	return false
}

func day(t time.Time) string { return t.Format(time.DateOnly) }

func count(w string) (int, bool) {
	w = strings.ToLower(w)
	if n, err := strconv.Atoi(w); err == nil {
		return n, n > 0
	}
	n, ok := counts[w]
	return n, ok
}

// shift moves now by n units and names the unit it lands in.
func shift(now time.Time, unit string, n int) string {
	switch strings.ToLower(unit) {
	case "day":
		return day(now.AddDate(0, 0, n))
	case "week":
		t := now.AddDate(0, 0, 7*n)
		return "the week of " + day(mondayOf(t))
	case "month":
		t := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, n, 0)
		return t.Format("2006-01")
	case "year":
		return strconv.Itoa(now.Year() + n)
	}
	return ""
}

func mondayOf(t time.Time) time.Time {
	off := (int(t.Weekday()) + 6) % 7 // days since Monday
	return t.AddDate(0, 0, -off)
}

// weekendOf is the Saturday of the weekend n weeks from now's ("this
// weekend" on a Sunday is the one ending today; "this weekend" said on a
// weekday in the past tense, the one before).
func weekendOf(now time.Time, n int, future bool) string {
	sat := mondayOf(now).AddDate(0, 0, 5)
	if n == 0 && !future && now.Weekday() != time.Saturday && now.Weekday() != time.Sunday {
		n = -1
	}
	return "the weekend of " + day(sat.AddDate(0, 0, 7*n))
}

// weekdayBefore is the last wd before now (or now itself, when orToday).
func weekdayBefore(now time.Time, wd time.Weekday, orToday bool) time.Time {
	d := (int(now.Weekday()) - int(wd) + 7) % 7
	if d == 0 && !orToday {
		d = 7
	}
	return now.AddDate(0, 0, -d)
}

// weekdayAfter is the next wd after now (or now itself, when orToday).
func weekdayAfter(now time.Time, wd time.Weekday, orToday bool) time.Time {
	d := (int(wd) - int(now.Weekday()) + 7) % 7
	if d == 0 && !orToday {
		d = 7
	}
	return now.AddDate(0, 0, d)
}

func monthOf(name string) time.Month { return months[strings.ToLower(strings.TrimRight(name, "."))] }

// monthDay resolves a month and day, with the year given or the nearest
// one in the statement's direction.
func monthDay(now time.Time, mon, dd, yyyy string, future bool) string {
	m := monthOf(mon)
	d, _ := strconv.Atoi(dd)
	if m == 0 || d < 1 || d > 31 {
		return ""
	}
	y := now.Year()
	if yyyy != "" {
		y, _ = strconv.Atoi(yyyy)
	} else if now.IsZero() {
		return ""
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if t.Month() != m {
		return "" // February 30
	}
	if yyyy == "" {
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		switch {
		case future && t.Before(today):
			t = t.AddDate(1, 0, 0)
		case !future && t.After(today):
			t = t.AddDate(-1, 0, 0)
		}
	}
	return day(t)
}

// month resolves a month name: with its year, or the nearest one in the
// statement's direction ("last June" the one before this month).
func month(now time.Time, rel, mon, yyyy string, future bool) string {
	m := monthOf(mon)
	if m == 0 {
		return ""
	}
	if yyyy != "" {
		y, _ := strconv.Atoi(yyyy)
		return fmt.Sprintf("%04d-%02d", y, int(m))
	}
	if now.IsZero() {
		return ""
	}
	y := now.Year()
	switch rel {
	case "last":
		if m >= now.Month() {
			y--
		}
	case "next":
		if m <= now.Month() {
			y++
		}
	case "this":
	default:
		switch {
		case future && m < now.Month():
			y++
		case !future && m > now.Month():
			y--
		}
	}
	return fmt.Sprintf("%04d-%02d", y, int(m))
}

// season names "last summer" and the like with its year.
func season(now time.Time, name, rel string) string {
	start := map[string]time.Month{"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}[name]
	y := now.Year()
	cur := time.Date(y, start, 1, 0, 0, 0, 0, time.UTC)
	switch rel {
	case "last":
		if !now.After(cur.AddDate(0, 3, 0)) {
			y--
		}
	case "next":
		if !now.Before(cur) {
			y++
		}
	}
	return name + " " + strconv.Itoa(y)
}

// futureRE: a clause that speaks of what is to come.
var futureRE = regexp.MustCompile(`(?i)\b(?:will|'ll|’ll|going to|gonna|plan|plans|planning|planned|about to|can't wait|can’t wait|upcoming|looking forward|next|tomorrow|coming up|scheduled|hoping to|hope to|want to|wanna|would like to|decided to|agreed to|chose to|opted to|settled on|due|deadline|make it|push it|move it)\b|\bin (?:` + countAlt + `) (?:day|week|month|year)s?\b|(?:'re|'m|\bare|\bam|\bis) (?:\w+ )?\w+ing\b`)

// pastRE: a clause in the past tense.
var pastRE = regexp.MustCompile(`(?i)\b(?:was|were|had|did|went|got|took|made|came|saw|met|ran|won|lost|left|bought|felt|found|told|gave|began|started|finished|ago|last|yesterday|[a-z]{2,}ed)\b`)

// isFuture reports whether clause speaks of the future (ambiguous dates
// are resolved forwards), else of the past or present.
func isFuture(clause string) bool {
	if futureRE.MatchString(clause) {
		return true
	}
	if pastRE.MatchString(clause) {
		return false
	}
	return presentRE.MatchString(clause) // "my exam is on Friday"
}

var presentRE = regexp.MustCompile(`(?i)\b(?:is|are|'s|’s|'m|’m|am|'re)\b`)

// annotateDates returns s with each resolved relative date phrase followed
// by its date in brackets: "I went there yesterday [2023-05-07]".
func annotateDates(s string, said int64) string {
	if said == 0 {
		return s
	}
	refs := findDates(s, said, isFuture(s))
	if len(refs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(s[last:r.end])
		if r.date != "" && !strings.Contains(r.words, r.date) {
			b.WriteString(" [" + r.date + "]")
		}
		last = r.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// dayOf is the UTC time of unixNano.
func dayOf(unixNano int64) time.Time { return time.Unix(0, unixNano).UTC() }

func itoa(n int) string { return strconv.Itoa(n) }
