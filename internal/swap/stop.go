package swap

// stopWords are the English stop words and question words whose terms a
// query may drop (see ParseQuery): the Snowball English list, as
// github.com/kljensen/snowball's IsStopWord holds it, plus its contractions
// ("don't", "what's"), the question word "whose" and the modals "would",
// "could", "ought". Documents keep them: this list only decides which query
// terms are "stop" terms, it never changes the index.
//
// Month names that are also words ("may", "march") and names that are also
// words ("will" is in the list: a modal far more often than a name) were
// weighed one by one; "may" and "march" are not stop words.
var stopWords = []string{
	"a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
	"be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
	"can", "cannot", "could", "did", "do", "does", "doing", "don", "down", "during",
	"each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
	"herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
	"just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now",
	"of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own",
	"s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs",
	"them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
	"under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while",
	"who", "whom", "whose", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves",
	// Contractions (the analyzer keeps an apostrophe between letters).
	"i'm", "you're", "he's", "she's", "it's", "we're", "they're", "i've", "you've", "we've", "they've",
	"i'd", "you'd", "he'd", "she'd", "we'd", "they'd", "i'll", "you'll", "he'll", "she'll", "we'll", "they'll",
	"isn't", "aren't", "wasn't", "weren't", "hasn't", "haven't", "hadn't", "doesn't", "don't", "didn't",
	"won't", "wouldn't", "shan't", "shouldn't", "can't", "couldn't", "mustn't", "let's", "that's", "who's",
	"what's", "here's", "there's", "when's", "where's", "why's", "how's",
}

// stopTerms holds the analyzed terms of stopWords (their stems: "does" →
// "doe", "having" → "have"), so that a query term, which is already
// stemmed, is looked up directly. Built once; never written after init.
var stopTerms = func() map[string]struct{} {
	m := make(map[string]struct{}, len(stopWords))
	for _, w := range stopWords {
		forEachTerm(w, func(t string) { m[t] = struct{}{} })
	}
	return m
}()

// IsStopTerm reports whether term, an analyzed term (QueryTerms), is the
// term of a stop word or question word. A content word stemmed to the same
// term as a stop word ("doe", the deer, and "does") is a stop term too.
func IsStopTerm(term string) bool {
	_, ok := stopTerms[term]
	return ok
}
