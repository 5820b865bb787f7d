package consolidate

import "strings"

// Labels: what an entry's value is of, in words, so the entry reads as a
// sentence about its subject ("works as: nurse", "son's name: Leo",
// "sister lives in: Berlin").

// attrLabel gives an attribute (its first segment) a label; noun labels
// take the subject's possessive ("son's name"), the others follow the
// subject ("son lives in").
var attrLabel = map[string]struct {
	words string
	noun  bool
}{
	"name":            {"name", true},
	"age":             {"age", true},
	"birthday":        {"birthday", true},
	"job_title":       {"works as", false},
	"employer":        {"works at", false},
	"industry":        {"works in", false},
	"home_city":       {"lives in", false},
	"hometown":        {"is from", false},
	"birthplace":      {"was born in", false},
	"allergy":         {"is allergic to", false},
	"diet":            {"diet", true},
	"avoids":          {"does not eat", false},
	"likes":           {"likes", false},
	"dislikes":        {"dislikes", false},
	"prefers":         {"prefers", false},
	"hobby":           {"hobby", true},
	"trip":            {"trip to", true},
	"plan":            {"plans to", false},
	"went_to":         {"went to", false},
	"went_on":         {"went on", false},
	"joined":          {"joined", false},
	"started":         {"started", false},
	"adopted":         {"adopted", false},
	"studies":         {"studies", false},
	"speaks":          {"speaks", false},
	"degree":          {"degree", true},
	"volunteers_at":   {"volunteers at", false},
	"condition":       {"has", false},
	"pregnant":        {"is", false},
	"former_job":      {"used to work as", false},
	"former_employer": {"used to work at", false},
	"former_home":     {"used to live in", false},
	"business":        {"runs", false},
	"car":             {"drives", false},
	"injury":          {"injured", false},
	"purchase":        {"bought", false},
	"decision":        {"decided", false},
	"deadline":        {"deadline", true},
	"teacher":         {"teacher", true},
	"email":           {"email", true},
	"phone":           {"phone", true},
	"tried":           {"tried", false},
	"pet":             {"pet", true},
	"kids_count":      {"number of children", true},
	"wedding":         {"wedding", true},
	"anniversary":     {"anniversary", true},
}

// labelOf is the label of subject's attribute: "user" is left out
// ("lives in"), another subject is named ("son's name", "sister lives
// in", "dog's name").
func labelOf(subject, attribute string) string {
	head, rest, _ := strings.Cut(attribute, "/")
	l, ok := attrLabel[head]
	words := strings.ReplaceAll(head, "_", " ")
	noun := true
	if ok {
		words, noun = l.words, l.noun
	}
	if strings.HasPrefix(head, "favorite_") {
		words = "favourite " + strings.ReplaceAll(strings.TrimPrefix(head, "favorite_"), "_", " ")
	}
	if !ok && rest != "" && !strings.HasPrefix(head, "favorite_") {
		words += " " + strings.ReplaceAll(rest, "_", " ")
	}
	who := subjectWords(subject)
	switch {
	case who == "":
		return words
	case who == "we":
		return "we " + words
	case noun:
		return who + "'s " + words
	}
	return who + " " + words
}

// subjectWords names a subject: "" for the user, "son" for "son" and
// "son/max", "dog" for "pet/dog", "pottery class" for
// "activity/pottery_class".
func subjectWords(subject string) string {
	switch subject {
	case "user", "":
		return ""
	case "we":
		return "we"
	}
	parts := strings.Split(subject, "/")
	switch parts[0] {
	case "pet", "activity":
		if len(parts) > 1 {
			return strings.ReplaceAll(parts[1], "_", " ")
		}
	}
	return strings.ReplaceAll(parts[0], "_", " ")
}
