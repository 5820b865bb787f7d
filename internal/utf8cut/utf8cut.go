// Package utf8cut cuts strings to a byte limit without splitting a UTF-8
// sequence.
package utf8cut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that ends at a
// rune boundary (s itself when it is short enough).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
