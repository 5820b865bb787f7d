package swap

// QueryTerm is one term of an analyzed query.
type QueryTerm struct {
	Term string
	// Stop is IsStopTerm(Term): a stop word or question word ("what",
	// "did", "you"), which a search may drop when the query has other
	// terms.
	Stop bool
}

// Query is an analyzed search query: its terms (QueryTerms, with their stop
// flag) and the days it names (QueryDates).
type Query struct {
	Terms []QueryTerm
	Dates []DayRange
	// Question is IsQuestion(query).
	Question bool
}

// ParseQuery analyzes a search query. Like QueryTerms it accepts every
// string; the result may have no terms.
func ParseQuery(query string) Query {
	var q Query
	for _, t := range QueryTerms(query) {
		q.Terms = append(q.Terms, QueryTerm{Term: t, Stop: IsStopTerm(t)})
	}
	q.Dates = QueryDates(query)
	first := ""
	if len(q.Terms) > 0 {
		first = q.Terms[0].Term // the query's first term: QueryTerms keeps the order
	}
	q.Question = opensQuestion(query, first)
	return q
}

// Content returns the terms a search ranks by: the terms that are not stop
// terms when there is at least one, every term otherwise, so a query is
// never emptied by this rule ("what?" alone still searches for "what").
func (q Query) Content() []string {
	var out []string
	for _, t := range q.Terms {
		if !t.Stop {
			out = append(out, t.Term)
		}
	}
	if len(out) == 0 {
		for _, t := range q.Terms {
			out = append(out, t.Term)
		}
	}
	return out
}
