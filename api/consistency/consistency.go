// Package consistency is the consistency token of a write: which log
// partition it was stored in and its sequence in that partition's stream,
// so that a read (on any node) can wait until the projection applied it.
//
// A token is "k<K>:p<i>:<seq>": K the deployment's number of log
// partitions (--log-partitions; 1 for the one stream), i the partition
// (0..K-1) and seq the write's sequence in that partition's stream, e.g.
// "k6:p3:1842" or "k1:p0:57". A client that wrote to several aggregates
// joins their tokens with ",", "k6:p3:1842,k6:p0:12"; Merge keeps the
// highest sequence per partition. Every token of a list names the same K.
//
// The package is pure: parsing, formatting, merging, and the wait for a
// parsed Set on a projection given as an interface (Wait). Its errors
// answer as 400 or 503 naming the field "consistency" (Error.Status).
package consistency

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Field is the request field a token is read from.
const Field = "consistency"

// MaxTokens bounds the tokens of one list (a list names each partition at
// most once after merging; a longer one is a mistake).
const MaxTokens = 256

// MaxLen bounds a token list's length in bytes.
const MaxLen = 8192

// Format is the token of a write stored at seq in partition part of a log
// in k partitions (k < 1 is 1).
func Format(k, part int, seq uint64) string {
	return "k" + strconv.Itoa(max(k, 1)) + ":p" + strconv.Itoa(part) + ":" + strconv.FormatUint(seq, 10)
}

// Set is a parsed token list: for a log in K partitions, the sequence
// each partition must have applied (0: none asked), the highest of the
// list's per partition.
type Set struct {
	K    int
	Seqs []uint64
}

// ErrMalformed, ErrPartitions, ErrRange, ErrBeyond and ErrLate are what
// this package's errors match (errors.Is).
var (
	ErrMalformed  = errors.New("malformed")
	ErrPartitions = errors.New("another number of partitions")
	ErrRange      = errors.New("partition out of range")
	ErrBeyond     = errors.New("sequence beyond the stream's last")
	ErrLate       = errors.New("not applied in time")
)

// Error is a token refused (Code 400) or a wait that ended before the
// projection applied it (503). Status is how the API answers it: the
// field consistency and the reason.
type Error struct {
	Code   int
	Kind   error
	Reason string
}

func (e *Error) Error() string                 { return Field + ": " + e.Reason }
func (e *Error) Unwrap() error                 { return e.Kind }
func (e *Error) Status() (int, string, string) { return e.Code, Field, e.Reason }

func refuse(kind error, f string, a ...any) error {
	return &Error{Code: 400, Kind: kind, Reason: fmt.Sprintf(f, a...)}
}

// Reason is the reason of an error of this package (its text without the
// field's name).
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return err.Error()
}

// Parse reads a token list for a deployment of k partitions (k < 1 is 1).
// It refuses (errors matching ErrMalformed, ErrPartitions, ErrRange) a
// list that is not tokens as Format writes them joined by ",", a token
// naming another K than k, a partition not below k, or a sequence of 0.
func Parse(s string, k int) (Set, error) {
	k = max(k, 1)
	if s == "" {
		return Set{}, refuse(ErrMalformed, "empty")
	}
	if len(s) > MaxLen {
		return Set{}, refuse(ErrMalformed, "%d bytes, at most %d", len(s), MaxLen)
	}
	items := strings.Split(s, ",")
	if len(items) > MaxTokens {
		return Set{}, refuse(ErrMalformed, "%d tokens, at most %d", len(items), MaxTokens)
	}
	set := Set{K: k, Seqs: make([]uint64, k)}
	for _, it := range items {
		tk, part, seq, err := parseOne(it)
		if err != nil {
			return Set{}, err
		}
		if tk != k {
			return Set{}, refuse(ErrPartitions, "%q is of a log in %d partitions, this deployment's is in %d", it, tk, k)
		}
		if part >= k {
			return Set{}, refuse(ErrRange, "%q names partition %d, the log's are 0..%d", it, part, k-1)
		}
		set.Seqs[part] = max(set.Seqs[part], seq)
	}
	return set, nil
}

// parseOne reads one token "k<K>:p<i>:<seq>".
func parseOne(s string) (k, part int, seq uint64, err error) {
	bad := func(why string) error {
		return refuse(ErrMalformed, "%q %s: want k<partitions>:p<partition>:<seq>, e.g. k6:p3:1842", s, why)
	}
	f := strings.Split(strings.TrimSpace(s), ":")
	if len(f) != 3 {
		return 0, 0, 0, bad("is not three fields")
	}
	ks, ok1 := strings.CutPrefix(f[0], "k")
	ps, ok2 := strings.CutPrefix(f[1], "p")
	if !ok1 || !ok2 {
		return 0, 0, 0, bad("lacks the k or p prefix")
	}
	if k, err = number(ks); err != nil || k < 1 {
		return 0, 0, 0, bad("has no partition count >= 1")
	}
	if part, err = number(ps); err != nil {
		return 0, 0, 0, bad("has no partition")
	}
	if seq, err = strconv.ParseUint(f[2], 10, 64); err != nil || seq == 0 || f[2][0] == '+' {
		return 0, 0, 0, bad("has no sequence >= 1")
	}
	return k, part, seq, nil
}

// number is a small decimal (digits only, at most 6 of them).
func number(s string) (int, error) {
	if s == "" || len(s) > 6 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, ErrMalformed
	}
	return strconv.Atoi(s)
}

// String is the set as a token list, partitions in order ("" when it
// names none).
func (s Set) String() string {
	var out []string
	for i, seq := range s.Seqs {
		if seq > 0 {
			out = append(out, Format(s.K, i, seq))
		}
	}
	return strings.Join(out, ",")
}

// Merge joins token lists into one, the highest sequence per partition,
// partitions in order. Lists of another K than the last list's are of a
// log laid out before (migrated since): they are dropped. Malformed
// tokens are dropped too (Merge is the client's bookkeeping, the server
// checks what it is sent).
func Merge(lists ...string) string {
	k := 0
	for _, l := range slices.Backward(lists) {
		if k = firstK(l); k > 0 {
			break
		}
	}
	if k == 0 {
		return ""
	}
	set := Set{K: k, Seqs: make([]uint64, k)}
	for _, l := range lists {
		for it := range strings.SplitSeq(l, ",") {
			tk, part, seq, err := parseOne(it)
			if err == nil && tk == k && part < k {
				set.Seqs[part] = max(set.Seqs[part], seq)
			}
		}
	}
	return set.String()
}

// firstK is the K of the list's first well-formed token (0: none).
func firstK(l string) int {
	for it := range strings.SplitSeq(l, ",") {
		if k, part, _, err := parseOne(it); err == nil && part < k {
			return k
		}
	}
	return 0
}
