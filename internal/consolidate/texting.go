package consolidate

import (
	"regexp"
	"strings"
)

// Chat is often typed in lower case and without apostrophes ("im a
// nurse", "ive got a dog", "i dont eat meat"). The rules read the first
// person spelled out, so such words are restored before the rules read a
// sentence; what an entry quotes stays as the user typed it.

// textingRE: a first-person word or a negation typed in chat shorthand.
var textingRE = regexp.MustCompile(`\b(?:i|i'm|im|Im|IM|i've|ive|Ive|i'd|i'll|dont|cant|didnt|doesnt|isnt|wasnt|havent|hasnt|wouldnt|couldnt|shouldnt|arent|werent)\b`)

// texting spells out the chat shorthand of the first person in s.
func texting(s string) string {
	return textingRE.ReplaceAllStringFunc(s, func(w string) string {
		switch strings.ToLower(w) {
		case "i":
			return "I"
		case "i'm", "im":
			return "I'm"
		case "i've", "ive":
			return "I've"
		case "i'd":
			return "I'd"
		case "i'll":
			return "I'll"
		}
		if w != strings.ToLower(w) {
			return w // "IM", "Dont": not shorthand of these
		}
		return w[:len(w)-2] + "n't"
	})
}
