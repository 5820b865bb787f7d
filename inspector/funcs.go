package inspector

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

var funcs = template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", f) },
	"width": func(f float64) template.CSS {
		return template.CSS(fmt.Sprintf("width:%.2f%%", min(max(f, 0), 100)))
	},
	"usagePct": func(used, budget uint32) float64 {
		if budget == 0 {
			return 0
		}
		return 100 * float64(used) / float64(budget)
	},
	"ago":  ago,
	"time": timeOf,
	"level": func(f float64) string {
		switch {
		case f >= 85:
			return "hot"
		case f >= 70:
			return "warm"
		}
		return "ok"
	},
	"add":      func(a, b int) int { return a + b },
	"mul":      func(a, b int) int { return a * b },
	"min64":    func(a int, b uint64) uint64 { return min(uint64(max(a, 0)), b) },
	"joinSeqs": joinSeqs,
	"add1":     func(v uint64) uint64 { return v + 1 },
	// entryCtx pairs a scope page with one of its entry rows (the row
	// template links by the page's scope and marks the page's key).
	"entryCtx": func(p scopesPage, e entryRow) struct {
		P scopesPage
		E entryRow
	} {
		return struct {
			P scopesPage
			E entryRow
		}{p, e}
	},
	"list": func(v ...atView) []atView { return v },
	"join": strings.Join,
}

// ago is a Unix nanosecond time as "3m ago" (with the date past a day).
func ago(ns int64) string {
	if ns == 0 {
		return "—"
	}
	d := time.Since(time.Unix(0, ns))
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02")
}
