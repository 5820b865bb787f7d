package projections

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Dump writes every bucket, meta included, in a human-readable form: one
// line per key, key components separated by " | ", numbers in decimal,
// protobuf values in compact text format. It is for operators (inspect) and
// golden tests; the format is not stable across schema versions.
func (s *Store) Dump(w io.Writer) error {
	return s.view(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := fmt.Fprintf(w, "[%s]\n", name); err != nil {
				return err
			}
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				_, err := fmt.Fprintf(w, "%s = %s\n", dumpKey(name, k), dumpValue(name, k, v))
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// keyShapes gives, per bucket, the widths of the key components: 0 is a
// string, 8 a u64.
var keyShapes = map[string][]int{
	string(bucketByUser):        {0, 8, 0},
	string(bucketByAgent):       {0, 8, 0},
	string(bucketSwapMessages):  {0, 8},
	string(bucketSwapIDs):       {0, 0},
	string(bucketSwapSummaries): {0, 8, 8, 0},
	string(bucketBM25Docs):      {8},
	string(bucketBM25Postings):  {0, 0, 8},
	string(bucketBM25Terms):     {0, 0},
	string(bucketBM25Stats):     {0, 0},
	string(bucketEntries):       {0, 0, 0},
	string(bucketEntryVersions): {0, 0, 0, 8},
	string(bucketScopeConfig):   {0, 0},
	string(bucketEntryDocs):     {8},
	string(bucketEntryDocIDs):   {0, 0, 0},
	string(bucketEntryPostings): {0, 0, 0, 8},
	string(bucketEntryTerms):    {0, 0, 0},
	string(bucketEntryStats):    {0, 0, 0},
	string(bucketVectors):       {0, 0, 8},
}

func dumpKey(bucket, k []byte) string {
	shape, ok := keyShapes[string(bucket)]
	if !ok {
		return strconv.Quote(string(k))
	}
	var parts []string
	rest := k
	for i, w := range shape {
		last := i == len(shape)-1
		switch {
		case w == 8 && len(rest) >= 8:
			parts = append(parts, strconv.FormatUint(beU64(rest), 10))
			rest = rest[8:]
			if !last && len(rest) > 0 && rest[0] == sep {
				rest = rest[1:]
			}
		case w == 0 && !last:
			j := bytes.IndexByte(rest, sep)
			if j < 0 {
				return strconv.Quote(string(k))
			}
			parts = append(parts, strconv.Quote(string(rest[:j])))
			rest = rest[j+1:]
		default:
			parts = append(parts, strconv.Quote(string(rest)))
			rest = nil
		}
	}
	return strings.Join(parts, " | ")
}

func dumpValue(bucket, k, v []byte) string {
	var m proto.Message
	switch string(bucket) {
	case string(bucketMeta):
		if bytes.Equal(k, metaVectorsModel) {
			return strconv.Quote(string(v))
		}
		switch len(v) {
		case 4:
			return strconv.FormatUint(uint64(beU32(v)), 10)
		case 8:
			return strconv.FormatUint(beU64(v), 10)
		}
	case string(bucketSessions):
		m = new(memoryv1.SessionIndexEntry)
	case string(bucketSwapMessages):
		m = new(memoryv1.Message)
	case string(bucketSwapSummaries):
		m = new(memoryv1.Summary)
	case string(bucketByUser), string(bucketByAgent):
		return `""`
	case string(bucketBM25Terms):
		if df, inline, err := parseTermValue(v, nil); err == nil {
			out := strconv.FormatUint(df, 10)
			for i, ib := range inline {
				p, err := dumpPostingBlock(ib.block, ib.v)
				if err != nil {
					return fmt.Sprintf("%x", v)
				}
				out += map[bool]string{true: " inline ", false: "; "}[i == 0] + p
			}
			return out
		}
	case string(bucketSwapIDs), string(bucketEntryDocIDs), string(bucketEntryTerms), string(bucketDataBytes):
		if len(v) == 8 {
			return strconv.FormatUint(beU64(v), 10)
		}
	case string(bucketBM25Docs):
		if dl, seq, sid, err := parseDocValue(v); err == nil {
			return fmt.Sprintf("len=%d seq=%d session=%q", dl, seq, sid)
		}
	case string(bucketBM25Postings):
		if len(k) >= 8 {
			if out, err := dumpPostingBlock(beU64(k[len(k)-8:]), v); err == nil {
				return out
			}
		}
	case string(bucketBM25Stats), string(bucketEntryStats):
		docs, total := parseStatsValue(v)
		return fmt.Sprintf("docs=%d total_len=%d", docs, total)
	case string(bucketEntries), string(bucketEntryVersions):
		m = new(memoryv1.Entry)
	case string(bucketScopeConfig):
		m = new(memoryv1.ScopeConfig)
	case string(bucketDataRefs):
		m = new(memoryv1.DataReference)
	case string(bucketCommands):
		if seq, version, digest, err := parseCommandValue(v); err == nil {
			if digest != nil {
				return fmt.Sprintf("seq=%d version=%d digest=%x", seq, version, digest)
			}
			return fmt.Sprintf("seq=%d version=%d", seq, version)
		}
	case string(bucketEntryPostings):
		if tf, dl, err := parseEntryPostingValue(v); err == nil {
			return fmt.Sprintf("tf=%d len=%d", tf, dl)
		}
	case string(bucketEntryDocs):
		if d, err := parseEntryDocValue(v, true); err == nil {
			return dumpEntryDoc(d)
		}
	case string(bucketVectors):
		if len(v)%4 == 0 && len(v) > 0 {
			return fmt.Sprintf("dims=%d first=%.4f", len(v)/4, math.Float32frombits(beU32(v)))
		}
	}
	if m != nil {
		if err := proto.Unmarshal(v, m); err == nil {
			return formatMessage(m.ProtoReflect())
		}
	}
	return fmt.Sprintf("%x", v)
}

// dumpPostingBlock renders a bm25_postings value as
// "doc_id: tf=… len=… session=…" entries separated by "; ".
func dumpPostingBlock(block uint64, v []byte) (string, error) {
	var r postingBlockReader
	r.reset(block, v, nil)
	var b bytes.Buffer
	for {
		p, ok, err := r.next()
		if err != nil {
			return "", err
		}
		if !ok {
			return b.String(), nil
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d: tf=%d len=%d session=%q", p.docID, p.tf, p.docLen, r.sessions[p.session])
	}
}

func beU32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// formatMessage renders m as "{field: value ...}" with the populated fields
// in field-number order. Unlike prototext it is byte-stable (golden files).
func formatMessage(m protoreflect.Message) string {
	var b bytes.Buffer
	b.WriteByte('{')
	fields := m.Descriptor().Fields()
	n := 0
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		n++
		b.WriteString(string(fd.Name()))
		b.WriteString(": ")
		v := m.Get(fd)
		if fd.IsList() {
			l := v.List()
			b.WriteByte('[')
			for j := 0; j < l.Len(); j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(formatValue(fd, l.Get(j)))
			}
			b.WriteByte(']')
			continue
		}
		b.WriteString(formatValue(fd, v))
	}
	b.WriteByte('}')
	return b.String()
}

func formatValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return formatMessage(v.Message())
	case protoreflect.StringKind:
		return strconv.Quote(v.String())
	case protoreflect.BytesKind:
		return fmt.Sprintf("%x", v.Bytes())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	}
	return fmt.Sprint(v.Interface())
}
