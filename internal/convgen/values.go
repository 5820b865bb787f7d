package convgen

import (
	"fmt"
	"strings"
	"time"
)

// values gives out value strings that are unique in a conversation: no
// value equals, contains or is contained in another one. Every string that
// looks like a fact value is registered here, including the noise of tool
// results (other orders' ids and totals), so finding an answer string in a
// text means the planted value is there.
type values struct {
	used []string
}

// fresh returns the first candidate of gen that conflicts with no value
// given out so far, and registers it. gen must eventually produce one.
func (v *values) fresh(gen func() string) string {
	for tries := 0; ; tries++ {
		c := gen()
		if !v.conflicts(c) {
			v.used = append(v.used, c)
			return c
		}
		if tries > 10000 {
			panic("convgen: value pool exhausted")
		}
	}
}

func (v *values) conflicts(c string) bool {
	for _, u := range v.used {
		if strings.Contains(u, c) || strings.Contains(c, u) {
			return true
		}
	}
	return false
}

// Value formats.

func (g *gen) personName() string {
	return g.values.fresh(func() string { return pick(g.rng, firstNames) + " " + pick(g.rng, lastNames) })
}

// euros: "47,500 EUR".
func (g *gen) euros() string {
	return g.values.fresh(func() string {
		return fmt.Sprintf("%d,%d00 EUR", 20+g.rng.IntN(460), g.rng.IntN(10))
	})
}

// dollars: "12,430.17 USD" (lo, hi: range of the thousands).
func (g *gen) dollars(lo, hi int) string {
	return g.values.fresh(func() string {
		return fmt.Sprintf("%d,%03d.%02d USD", lo+g.rng.IntN(hi-lo), g.rng.IntN(1000), g.rng.IntN(100))
	})
}

// isoDate: a date 3 weeks to 2 years after the conversation's start,
// "2025-06-17".
func (g *gen) isoDate() string {
	return g.values.fresh(func() string {
		d := time.Unix(0, g.cfg.StartUnixNano).UTC().AddDate(0, 0, 21+g.rng.IntN(700))
		return d.Format("2006-01-02")
	})
}

// code: prefix + "-" + digits digits, "ORN-4821".
func (g *gen) code(prefix string, digits int) string {
	return g.values.fresh(func() string {
		n := g.rng.IntN(9 * pow10(digits-1))
		return fmt.Sprintf("%s-%d", prefix, pow10(digits-1)+n)
	})
}

// orderID: "ORD-7F3K2".
func (g *gen) orderID() string {
	const alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	return g.values.fresh(func() string {
		var b [5]byte
		for i := range b {
			b[i] = alnum[g.rng.IntN(len(alnum))]
		}
		return "ORD-" + string(b[:])
	})
}

// option returns an unused option of a pool (decisions, dog names), or ""
// when every option is used.
func (g *gen) option(pool []string) string {
	var free []string
	for _, o := range pool {
		if !g.values.conflicts(o) {
			free = append(free, o)
		}
	}
	if len(free) == 0 {
		return ""
	}
	o := pick(g.rng, free)
	g.values.used = append(g.values.used, o)
	return o
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}
