package inspector

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLiveBudget: the inspector's live budget takes a stream's sessions
// all at once or none, and a stream past it is a 503 page asking to retry.
func TestLiveBudget(t *testing.T) {
	s := &slots{size: 3}
	r1, ok := s.take(2)
	if !ok {
		t.Fatal("2 of 3 refused")
	}
	if _, ok := s.take(2); ok {
		t.Fatal("2 more of 3 taken")
	}
	r2, ok := s.take(1)
	if !ok {
		t.Fatal("the last one refused")
	}
	r1()
	r2()
	if s.used != 0 {
		t.Fatalf("%d used after release", s.used)
	}

	in := &Inspector{cfg: DefaultConfig(), deps: Deps{Logger: slog.Default()}, liveSlots: &slots{size: 1}, ctx: context.Background()}
	var err error
	if in.pages, err = parsePages(); err != nil {
		t.Fatal(err)
	}
	release, _ := in.liveSlots.take(1)
	defer release()
	w := httptest.NewRecorder()
	in.live(w, httptest.NewRequest(http.MethodGet, "/ui/live?s=s1:5", nil), &viewer{name: "local"})
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "retry shortly") ||
		!strings.Contains(w.Body.String(), `<nav class="main"`) {
		t.Errorf("past the budget: %d %q\n%s", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	w = httptest.NewRecorder()
	in.live(w, httptest.NewRequest(http.MethodGet, "/ui/live?s=bad.id:5", nil), &viewer{name: "local"})
	if w.Code != http.StatusBadRequest {
		t.Errorf("a bad session id: %d", w.Code)
	}
}
