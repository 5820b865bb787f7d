package inspector

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

type searchPage struct {
	Base
	Query    string
	Hits     []searchHit
	Reranked bool
	Searched bool
}

type searchHit struct {
	Score   float64
	ID      string
	Seq     uint64
	Role    string
	Day     string
	Tokens  uint32
	Content template.HTML
}

// maxSearchQuery bounds the query (bytes).
const maxSearchQuery = 1024

// searchPage runs the API's search in the session (the search the API
// serves, BM25 and whatever the node fuses) and highlights the words of
// each hit that match a query term, as the search analyzes them.
func (in *Inspector) searchPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	p := searchPage{Base: base(v, id), Query: r.URL.Query().Get("q")}
	p.Tab = "search"
	if len(p.Query) > maxSearchQuery {
		return "", nil, badInput{"q", "longer than 1024 bytes"}
	}
	info, err := v.c.Get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(p.Query) == "" {
		return "search.html", p, nil
	}
	rep, err := v.c.Search(ctx, id, &memoryv1.SearchRequest{Query: p.Query, Limit: 20, MinSeq: info.GetSeq()})
	if err != nil {
		return "", nil, err
	}
	p.Searched, p.Reranked = true, rep.GetReranked()
	for _, h := range rep.GetHits() {
		m := h.GetMessage()
		p.Hits = append(p.Hits, searchHit{Score: h.GetScore(), ID: m.GetId(), Seq: m.GetSeq(), Role: roleName(m.GetRole()),
			Day: day(m), Tokens: m.GetTokens(), Content: highlight(m.GetContent(), p.Query)})
	}
	return "search.html", p, nil
}

// highlight escapes text and marks the words whose analyzed terms are
// among the query's (stop words aside).
func highlight(text, query string) template.HTML {
	want := map[string]bool{}
	for _, t := range swap.QueryTerms(query) {
		if !swap.IsStopTerm(t) {
			want[t] = true
		}
	}
	var b strings.Builder
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' }
	rs := []rune(text)
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && isWord(rs[j]) == isWord(rs[i]) {
			j++
		}
		chunk := string(rs[i:j])
		hit := false
		if isWord(rs[i]) {
			for _, t := range swap.Analyze(chunk) {
				hit = hit || want[t]
			}
		}
		if hit {
			b.WriteString("<mark>")
			b.WriteString(template.HTMLEscapeString(chunk))
			b.WriteString("</mark>")
		} else {
			b.WriteString(template.HTMLEscapeString(chunk))
		}
		i = j
	}
	return template.HTML(b.String()) //nolint:gosec // every piece of text is escaped above
}
