package events

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/placement"
)

// The log in K partitions (docs/PARTITIONS.md). With K = 1 the log is one
// stream (JetStreamConfig.Stream, "MEM") holding the subjects
// mem.ev.<kind>.<id> as they are. With K > 1 partition i is the stream
// <stream>_P<i> holding the stored subjects mem.ev.p<i>.<kind>.<id>
// (filter mem.ev.p<i>.>): JetStream needs disjoint filters, and a hash is
// no filter, so the partition is a token of the stored subject. Everything
// above a Log sees the logical subject mem.ev.<kind>.<id> for every K.
const (
	// MaxLogPartitions is the most partitions a log may have.
	MaxLogPartitions = 256
	// PartitionsMetadataKey, on every stream of a log in K > 1 partitions,
	// is K; PartitionMetadataKey is the stream's own index.
	PartitionsMetadataKey = "agentmem.log.partitions"
	PartitionMetadataKey  = "agentmem.log.partition"

	partitionStreamSep = "_P"
)

// LogPartition is the partition of the aggregate id among k: FNV-1a 32 of
// the id modulo k, the hash placement uses for the ownership of
// aggregates (placement.Partition). Only the id counts, not the kind.
func LogPartition(id string, k int) int {
	if k <= 1 {
		return 0
	}
	return placement.Partition(id, k)
}

// SubjectPartition is the partition among k of the aggregate of the
// logical subject mem.ev.<kind>.<id>. A malformed subject is an error
// matching ErrInvalidID.
func SubjectPartition(subject string, k int) (int, error) {
	_, id, err := ParseSubject(subject)
	if err != nil {
		return 0, err
	}
	return LogPartition(id, k), nil
}

// PartitionStream is the name of partition i's stream of the log stream
// among k: the stream itself when k is 1, else <stream>_P<i>.
func PartitionStream(stream string, i, k int) string {
	if k <= 1 {
		return stream
	}
	return stream + partitionStreamSep + strconv.Itoa(i)
}

// partitionToken is the subject token of partition i: "p<i>".
func partitionToken(i int) string { return "p" + strconv.Itoa(i) }

// PartitionSubjects is the subject filter of partition i's stream among k.
func PartitionSubjects(i, k int) string {
	if k <= 1 {
		return SubjectPrefix + ".>"
	}
	return SubjectPrefix + "." + partitionToken(i) + ".>"
}

// StoredSubject is the subject a logical subject or filter
// (mem.ev.<kind>.<id>, mem.ev.session.*, mem.ev.>) is stored under in
// partition i of k: itself when k is 1, else mem.ev.p<i>.<rest>. The
// logical subject must start with SubjectPrefix.
func StoredSubject(subject string, i, k int) string {
	if k <= 1 {
		return subject
	}
	return storedIn(partitionToken(i), subject)
}

// storedIn inserts the partition token part after the prefix ("" keeps
// subject as is).
func storedIn(part, subject string) string {
	if part == "" {
		return subject
	}
	rest, ok := strings.CutPrefix(subject, SubjectPrefix+".")
	if !ok {
		return subject // not a log subject: the server answers for it
	}
	return SubjectPrefix + "." + part + "." + rest
}

// logicalIn removes the partition token part from a stored subject ("":
// subject as is).
func logicalIn(part, stored string) string {
	if part == "" {
		return stored
	}
	if rest, ok := strings.CutPrefix(stored, SubjectPrefix+"."+part+"."); ok {
		return SubjectPrefix + "." + rest
	}
	return stored
}

// ParseStoredSubject splits a subject as stored in a log of any K: the
// logical form mem.ev.<kind>.<id> (partition −1) or the partitioned form
// mem.ev.p<i>.<kind>.<id>. Readers of the streams that bypass this package
// (a JetStream consumer on mem.ev.>) parse with it. Errors match
// ErrInvalidID.
func ParseStoredSubject(subj string) (partition int, kind, id string, err error) {
	rest, ok := strings.CutPrefix(subj, SubjectPrefix+".")
	if !ok || strings.Count(rest, ".") != 2 {
		kind, id, err = ParseSubject(subj)
		return -1, kind, id, err
	}
	tok, logical, _ := strings.Cut(rest, ".")
	p, perr := strconv.Atoi(strings.TrimPrefix(tok, "p"))
	if !strings.HasPrefix(tok, "p") || perr != nil || p < 0 || p >= MaxLogPartitions || tok != partitionToken(p) {
		return -1, "", "", &FieldError{Field: "subject", Reason: fmt.Sprintf("%q: token %q is no partition (p<i>)", subj, tok)}
	}
	kind, id, err = ParseSubject(SubjectPrefix + "." + logical)
	if err != nil {
		return -1, "", "", err
	}
	return p, kind, id, nil
}

// ValidatePartitions checks a partition count: 1..MaxLogPartitions. The
// error wraps ErrInvalidConfig and names field.
func ValidatePartitions(field string, k int) error {
	if k < 1 || k > MaxLogPartitions {
		return fmt.Errorf("%w: %s: %d not in 1..%d", ErrInvalidConfig, field, k, MaxLogPartitions)
	}
	return nil
}
