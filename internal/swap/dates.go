package swap

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/facts"
)

// Day is a calendar day in UTC, counted from 1970-01-01 (day 0).
type Day int32

// DayOf returns the UTC day of t (Unix nanoseconds).
func DayOf(unixNano int64) Day {
	const nsPerDay = int64(24 * time.Hour)
	d := unixNano / nsPerDay
	if unixNano%nsPerDay < 0 {
		d-- // floor, for times before 1970
	}
	return Day(d)
}

// String formats d as YYYY-MM-DD.
func (d Day) String() string {
	return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
}

// DayRange is an inclusive range of days, First <= Last.
type DayRange struct {
	First, Last Day
}

// Len is the number of days in r.
func (r DayRange) Len() int { return int(r.Last-r.First) + 1 }

// MaxQueryDates bounds the dates QueryDates returns for one query.
const MaxQueryDates = 4

// QueryDates returns the calendar days a query names, at most
// MaxQueryDates ranges, in order of appearance. Recognized, case-insensitive,
// with month names in full or abbreviated ("sep", "sept"):
//
//	2023-05-08, 2023/05/08, 2023.05.08         one day
//	8 May 2023, 8th of May, 2023, 8 May. 2023  one day
//	May 8 2023, May 8th, 2023                  one day
//	May 2023, May, 2023, May of 2023, 2023-05  the days of the month
//
// Years are 1900..2999. Impossible dates ("2023-02-30", which is not read
// again as the month 2023-02), dates without a year ("May 8") and relative
// dates ("yesterday", "last week": the projection has no clock of its own)
// are ignored. Numbers and words must stand alone: "x2023-05-08" is no date.
func QueryDates(query string) []DayRange {
	if !hasYear(query) { // every form holds a year: most queries stop here
		return nil
	}
	toks := dateTokens(query)
	var out []DayRange
	for i := 0; i < len(toks) && len(out) < MaxQueryDates; {
		r, n := dateAt(toks, i)
		if n == 0 {
			i++
			continue
		}
		if r.First <= r.Last {
			out = append(out, r)
		}
		i += n
	}
	return out
}

// dateToken is a maximal run of ASCII digits, a maximal run of ASCII
// letters or one other non-space byte of a query, lower-cased; space says
// whether white space precedes it.
type dateToken struct {
	text  string
	kind  byte // 'd' digits, 'a' letters, else the byte itself
	space bool
}

func dateTokens(s string) []dateToken {
	var toks []dateToken
	space := true
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = true
			i++
			continue
		case isDigit(c):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			toks = append(toks, dateToken{s[i:j], 'd', space})
			i = j
		case isASCIILetter(c):
			j := i
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			toks = append(toks, dateToken{strings.ToLower(s[i:j]), 'a', space})
			i = j
		default:
			toks = append(toks, dateToken{s[i : i+1], c, space})
			i++
		}
		space = false
	}
	return toks
}

func isDigit(c byte) bool       { return '0' <= c && c <= '9' }
func isASCIILetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// dateAt reads a date starting at toks[i]; n is the number of tokens it
// spans (0: none). A span shaped like a date that is no date returns an
// empty range (First > Last) and its length, so it is skipped whole.
func dateAt(toks []dateToken, i int) (r DayRange, n int) {
	at := func(j int) dateToken {
		if j < len(toks) {
			return toks[j]
		}
		return dateToken{}
	}
	// A date starts a word: not glued to letters, digits or '_' before it.
	if i > 0 && !at(i).space && (toks[i-1].kind == 'd' || toks[i-1].kind == 'a' || toks[i-1].kind == '_') {
		return r, 0
	}
	// ends reports whether a date may end before toks[j]: at the end, a
	// space or punctuation, but not "-" or "/" or "." that goes on with a
	// digit ("2023-05-08-1", "2023-05-08.5").
	ends := func(j int) bool {
		t := at(j)
		switch {
		case j >= len(toks) || t.space:
			return true
		case t.kind == 'd' || t.kind == 'a' || t.kind == '_':
			return false
		case t.kind == '-' || t.kind == '/' || t.kind == '.':
			return !(j+1 < len(toks) && !toks[j+1].space && toks[j+1].kind == 'd')
		}
		return true
	}
	year := func(t dateToken) bool { return t.kind == 'd' && len(t.text) == 4 }
	small := func(t dateToken) bool { return t.kind == 'd' && len(t.text) <= 2 }
	glued := func(j int, kinds string) bool {
		t := at(j)
		return j < len(toks) && !t.space && strings.IndexByte(kinds, t.kind) >= 0
	}
	bad := DayRange{First: 1, Last: 0}
	t0 := at(i)
	switch {
	case year(t0):
		// 2023-05-08, 2023/05/08, 2023.05.08, 2023-05
		if !glued(i+1, "-/.") || !glued(i+2, "d") || !small(at(i+2)) {
			return r, 0
		}
		if at(i+3).kind == at(i+1).kind && glued(i+3, "-/.") && glued(i+4, "d") {
			if !small(at(i+4)) || !ends(i+5) {
				return r, 0 // "2023-05-08x", "2023-05-081": not a date, nor its month
			}
			if r, ok := dayRange(t0.text, at(i+2).text, at(i+4).text); ok {
				return r, 5
			}
			return bad, 5
		}
		if at(i+1).kind == '-' && ends(i+3) {
			if r, ok := monthRange(t0.text, at(i+2).text); ok {
				return r, 3
			}
			return bad, 3
		}
	case small(t0):
		// 8 May 2023, 8th of May, 2023
		j := i + 1
		if glued(j, "a") && ordinal(at(j).text) {
			j++
		}
		if at(j).space && at(j).text == "of" {
			j++
		}
		m := facts.MonthNumber(at(j).text)
		if m == "" || !at(j).space || at(j).kind != 'a' {
			return r, 0
		}
		j = afterMonth(toks, j+1)
		if !year(at(j)) || !at(j).space || !ends(j+1) {
			return r, 0
		}
		if r, ok := dayRange(at(j).text, m, t0.text); ok {
			return r, j + 1 - i
		}
		return bad, j + 1 - i
	case t0.kind == 'a':
		m := facts.MonthNumber(t0.text)
		if m == "" {
			return r, 0
		}
		j := afterMonth(toks, i+1)
		// May 8 2023, May 8th, 2023
		if d := at(j); small(d) && d.space {
			k := j + 1
			if glued(k, "a") && ordinal(at(k).text) {
				k++
			}
			if at(k).kind == ',' && !at(k).space {
				k++
			}
			if year(at(k)) && at(k).space && ends(k+1) {
				if r, ok := dayRange(at(k).text, m, d.text); ok {
					return r, k + 1 - i
				}
				return bad, k + 1 - i
			}
			return r, 0
		}
		// May 2023, May, 2023, May of 2023
		if at(j).space && at(j).text == "of" {
			j++
		}
		if year(at(j)) && at(j).space && ends(j+1) {
			if r, ok := monthRange(at(j).text, m); ok {
				return r, j + 1 - i
			}
			return bad, j + 1 - i
		}
	}
	return r, 0
}

// afterMonth skips a '.' glued to a month name and a ',' after it.
func afterMonth(toks []dateToken, j int) int {
	if j < len(toks) && toks[j].kind == '.' && !toks[j].space {
		j++
	}
	if j < len(toks) && toks[j].kind == ',' {
		j++
	}
	return j
}

func ordinal(s string) bool { return s == "st" || s == "nd" || s == "rd" || s == "th" }

// hasYear reports whether s holds four ASCII digits in a row.
func hasYear(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			if run++; run == 4 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

func ymd(year, month, day string) (y, m, d int, ok bool) {
	y, e1 := strconv.Atoi(year)
	m, e2 := strconv.Atoi(month)
	d, e3 := strconv.Atoi(day)
	if e1 != nil || e2 != nil || e3 != nil || y < 1900 || y > 2999 || m < 1 || m > 12 {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func dayRange(year, month, day string) (DayRange, bool) {
	y, m, d, ok := ymd(year, month, day)
	if !ok {
		return DayRange{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d { // 2023-02-30 normalizes to March: not a date
		return DayRange{}, false
	}
	return DayRange{dayOfTime(t), dayOfTime(t)}, true
}

func monthRange(year, month string) (DayRange, bool) {
	y, m, _, ok := ymd(year, month, "1")
	if !ok {
		return DayRange{}, false
	}
	first := time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1)
	return DayRange{dayOfTime(first), dayOfTime(last)}, true
}

// dayOfTime is the day of a UTC midnight (Unix seconds: years past 2262
// overflow Unix nanoseconds).
func dayOfTime(t time.Time) Day { return Day(t.Unix() / 86400) }
