package consolidate

import (
	"strconv"
	"strings"
)

// synonyms maps an attribute synonym to its canonical name
// (data/attribute_synonyms.txt).
var synonyms = readSynonyms("attribute_synonyms.txt")

func readSynonyms(name string) map[string]string {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		panic("consolidate: " + err.Error())
	}
	out := map[string]string{}
	for n, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		canon, syns, ok := strings.Cut(l, ":")
		canon = strings.TrimSpace(canon)
		if !ok || canon == "" {
			panic("consolidate: data/" + name + ": line " + strconv.Itoa(n+1) + ": want \"canonical: synonym, ...\"")
		}
		for _, s := range strings.Split(syns, ",") {
			if s = strings.TrimSpace(s); s != "" && s != canon {
				if _, dup := out[s]; dup {
					panic("consolidate: data/" + name + ": " + s + " is listed twice")
				}
				out[s] = canon
			}
		}
	}
	return out
}

// listed: the canonical attributes the rules file with a second segment
// ("allergy/peanuts"); a synonym of one is replaced in a first segment too.
var listed = map[string]bool{"allergy": true, "likes": true, "dislikes": true, "speaks": true}

// CanonicalAttribute files attribute under its canonical name when
// data/attribute_synonyms.txt lists it as a synonym: the whole attribute,
// or the first segment of a listed one ("allergies/peanuts" →
// "allergy/peanuts"); otherwise attribute as it is.
func CanonicalAttribute(attribute string) string {
	if c, ok := synonyms[attribute]; ok {
		return c
	}
	head, rest, ok := strings.Cut(attribute, "/")
	if c, found := synonyms[head]; ok && found && listed[c] {
		return c + "/" + rest
	}
	return attribute
}
