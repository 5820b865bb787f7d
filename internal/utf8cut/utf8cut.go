// Package utf8cut cuts strings to a byte limit without splitting a UTF-8
// sequence.
package utf8cut

import "unicode/utf8"

// Prefix returns the longest prefix of s (a string or bytes) of at most n
// bytes that ends at a rune boundary (s itself when it is short enough).
func Prefix[S ~string | ~[]byte](s S, n int) S {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
