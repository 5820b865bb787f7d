package inspector

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// diffLine is one line of a line diff: Op is ' ' (kept), '-' or '+'.
type diffLine struct {
	Op   string
	Text string
}

// Class is the line's CSS class.
func (d diffLine) Class() string {
	switch d.Op {
	case "-":
		return "ddel"
	case "+":
		return "dadd"
	}
	return "dkeep"
}

// maxDiffLines bounds the lines diffed (a longer value is compared as one
// replaced block): the LCS table is quadratic.
const maxDiffLines = 400

// diffLines is a line diff of a to b by a longest common subsequence (nil
// when a is empty: the first version has nothing to compare with).
func diffLines(a, b string) []diffLine {
	if a == "" {
		return nil
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x) > maxDiffLines || len(y) > maxDiffLines {
		out := make([]diffLine, 0, len(x)+len(y))
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j]: the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", x[i]})
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{"-", x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{"+", y[j]})
	}
	return out
}

// isText reports whether v is UTF-8 without control bytes other than
// whitespace.
func isText(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	for _, c := range v {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

// preview is s cut to n runes on one line.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }
