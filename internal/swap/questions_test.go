package swap

import (
	"math"
	"testing"
)

func TestQuestionShare(t *testing.T) {
	for _, tc := range []struct {
		text string
		want float64
	}{
		{"", 0},
		{"?!", 0},
		{"What is the open balance of Acme?", 1},
		{"The open balance is 3.14 USD.", 0},
		{"Can you check Acme again? I think their account changed.", 0.5},
		{"Is it v2.3? Yes", 0.8}, // v2, 3: the period does not end the sentence
		{"Why\nBecause it broke", 0},
		{"Why?\nBecause it broke", 0.25},
		{"数据库？是的。", 0.5},
		{"Hello there", 0},
	} {
		if got := QuestionShare(tc.text); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("QuestionShare(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestIsQuestion(t *testing.T) {
	for q, want := range map[string]bool{
		"What is the open balance of Acme?": true,
		"who leads orion":                   true,
		"Did the deploy fail":               true,
		"Remind me: who leads Orion?":       true,
		"Orion lead":                        false,
		"open balance Acme":                 false,
		"":                                  false,
		"the why of it":                     false,
	} {
		if got := IsQuestion(q); got != want {
			t.Errorf("IsQuestion(%q) = %v, want %v", q, got, want)
		}
	}
}
