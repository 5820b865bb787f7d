package consistency

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFormatParse(t *testing.T) {
	for _, c := range []struct {
		k, part int
		seq     uint64
		want    string
	}{
		{6, 3, 1842, "k6:p3:1842"},
		{1, 0, 57, "k1:p0:57"},
		{0, 0, 9, "k1:p0:9"},
		{256, 255, 1 << 62, "k256:p255:4611686018427387904"},
	} {
		got := Format(c.k, c.part, c.seq)
		if got != c.want {
			t.Fatalf("Format(%d, %d, %d) = %q, want %q", c.k, c.part, c.seq, got, c.want)
		}
		set, err := Parse(got, c.k)
		if err != nil {
			t.Fatalf("Parse(%q): %v", got, err)
		}
		if set.Seqs[c.part] != c.seq || set.K != max(c.k, 1) || set.String() != c.want {
			t.Fatalf("Parse(%q) = %+v", got, set)
		}
	}
}

func TestParseListKeepsHighestPerPartition(t *testing.T) {
	set, err := Parse("k6:p3:40,k6:p0:12, k6:p3:41,k6:p3:7", 6)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{12, 0, 0, 41, 0, 0}; !slices.Equal(set.Seqs, want) {
		t.Fatalf("seqs %v, want %v", set.Seqs, want)
	}
	if set.String() != "k6:p0:12,k6:p3:41" {
		t.Fatalf("String %q", set.String())
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		in   string
		k    int
		kind error
		says string
	}{
		{"", 6, ErrMalformed, "empty"},
		{"12", 6, ErrMalformed, "three fields"},
		{"k6:p3", 6, ErrMalformed, "three fields"},
		{"6:p3:12", 6, ErrMalformed, "prefix"},
		{"k6:3:12", 6, ErrMalformed, "prefix"},
		{"k0:p0:12", 6, ErrMalformed, "partition count"},
		{"kx:p0:12", 6, ErrMalformed, "partition count"},
		{"k6:p-1:12", 6, ErrMalformed, "no partition"},
		{"k6:p3:0", 6, ErrMalformed, "sequence"},
		{"k6:p3:+4", 6, ErrMalformed, "sequence"},
		{"k6:p3:abc", 6, ErrMalformed, "sequence"},
		{"k6:p3:99999999999999999999", 6, ErrMalformed, "sequence"},
		{"k6:p3:12,", 6, ErrMalformed, "three fields"},
		{strings.Repeat("k6:p3:12,", 1000), 6, ErrMalformed, "bytes"},
		{strings.Repeat("k1:p0:1,", 300) + "k1:p0:1", 1, ErrMalformed, "tokens"},
		{"k4:p3:12", 6, ErrPartitions, "in 4 partitions, this deployment's is in 6"},
		{"k6:p0:1,k1:p0:12", 6, ErrPartitions, "in 1 partitions"},
		{"k6:p1:12", 1, ErrPartitions, "this deployment's is in 1"},
		{"k6:p6:12", 6, ErrRange, "partition 6, the log's are 0..5"},
	} {
		_, err := Parse(c.in, c.k)
		if !errors.Is(err, c.kind) {
			t.Fatalf("Parse(%.40q, %d) = %v, want %v", c.in, c.k, err, c.kind)
		}
		if code, field, why := err.(*Error).Status(); code != 400 || field != "consistency" || !strings.Contains(why, c.says) || Reason(err) != why {
			t.Fatalf("Parse(%.40q): %q, want it to say %q", c.in, err, c.says)
		}
	}
}

func TestMerge(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"", ""}, ""},
		{[]string{"k6:p3:40"}, "k6:p3:40"},
		{[]string{"k6:p3:40", "k6:p0:12"}, "k6:p0:12,k6:p3:40"},
		{[]string{"k6:p3:40,k6:p0:12", "k6:p3:39", "k6:p0:13"}, "k6:p0:13,k6:p3:40"},
		// Another K: the older layout's tokens are dropped.
		{[]string{"k1:p0:900", "k6:p2:5"}, "k6:p2:5"},
		{[]string{"k6:p2:5", "garbage", ""}, "k6:p2:5"},
		{[]string{"k6:p9:5"}, ""},
	} {
		if got := Merge(c.in...); got != c.want {
			t.Fatalf("Merge(%q) = %q, want %q", c.in, got, c.want)
		}
		if c.want != "" {
			if _, err := Parse(c.want, firstK(c.want)); err != nil {
				t.Fatalf("Merge(%q) = %q does not parse: %v", c.in, c.want, err)
			}
		}
	}
}
