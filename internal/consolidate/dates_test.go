package consolidate

import (
	"testing"
	"time"
)

// TestResolveDates: relative dates resolved against when they were said
// (Monday 8 May 2023), in the direction the statement speaks of.
func TestResolveDates(t *testing.T) {
	said := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()
	cases := []struct {
		text, words, date string
	}{
		{"I went there yesterday", "yesterday", "2023-05-07"},
		{"we met last night", "last night", "2023-05-07"},
		{"the day before yesterday I fell", "the day before yesterday", "2023-05-06"},
		{"I'll call tomorrow", "tomorrow", "2023-05-09"},
		{"I joined last week", "last week", "the week of 2023-05-01"},
		{"we hiked last weekend", "last weekend", "the weekend of 2023-05-06"},
		{"I went last Tuesday", "last Tuesday", "2023-05-02"},
		{"I went on Friday", "on Friday", "2023-05-05"},
		{"I'm going on Friday", "on Friday", "2023-05-12"},
		{"I'll see her next Friday", "next Friday", "2023-05-12"},
		{"I moved two years ago", "two years ago", "2021"},
		{"I started 3 months ago", "3 months ago", "2023-02"},
		{"I ran it a couple of weeks ago", "a couple of weeks ago", "the week of 2023-04-24"},
		{"we're moving next month", "next month", "2023-06"},
		{"I finished it last month", "last month", "2023-04"},
		{"we went in June", "in June", "2022-06"},
		{"we're going in June", "in June", "2023-06"},
		{"I was there in March", "in March", "2023-03"},
		{"it's on March 3rd", "March 3rd", "2024-03-03"},
		{"it was on March 3rd", "March 3rd", "2023-03-03"},
		{"born on 14 July 1990", "14 July 1990", "1990-07-14"},
		{"since 2019", "since 2019", "2019"},
		{"we met in two weeks", "in two weeks", "the week of 2023-05-22"},
		{"last summer was great", "last summer", "summer 2022"},
		{"I did it a few days ago", "a few days ago", ""},
	}
	for _, c := range cases {
		d, ok := findDate(c.text, said, isFuture(c.text))
		if !ok || d.words != c.words || d.date != c.date {
			t.Errorf("%q: got %q → %q (found %v), want %q → %q", c.text, d.words, d.date, ok, c.words, c.date)
		}
	}
	// Without a said time only a date with its year resolves.
	if d, _ := findDate("I went yesterday", 0, false); d.date != "" {
		t.Errorf("yesterday without a said time: %q", d.date)
	}
	if d, _ := findDate("on March 3rd, 2021", 0, false); d.date != "2021-03-03" {
		t.Errorf("a date with its year: %q", d.date)
	}
	// "may" and "march" are words too.
	for _, text := range []string{"I may go", "we march on", "May I ask?"} {
		if d, ok := findDate(text, said, false); ok {
			t.Errorf("%q: a date %q", text, d.words)
		}
	}
}

// TestAnnotateDates: the digest shows each relative date's day.
func TestAnnotateDates(t *testing.T) {
	got := annotateDates("I went to a book fair yesterday and I'm going back next Friday.", said08May)
	want := "I went to a book fair yesterday [2023-05-07] and I'm going back next Friday [2023-05-12]."
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
