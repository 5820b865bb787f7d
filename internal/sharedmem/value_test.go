package sharedmem

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestValueCompression(t *testing.T) {
	repetitive := bytes.Repeat([]byte("agent memory "), 800)[:10_000]
	random := randomBytes(10_000, 1)
	s := New(KindAgent, "a1")
	for _, tc := range []struct {
		name       string
		value      []byte
		compressed bool
	}{
		{"small", []byte("short"), false},
		{"repetitive", repetitive, true},
		{"random", random, false},
	} {
		e := lastEntry(mustPut(t, s, &memoryv1.PutEntryRequest{Key: tc.name, Value: tc.value}, t0))
		if e.Compressed != tc.compressed || int(e.Size) != len(tc.value) {
			t.Fatalf("%s: compressed %v size %d", tc.name, e.Compressed, e.Size)
		}
		if tc.compressed && len(e.Value) >= len(tc.value) {
			t.Fatalf("%s: stored %d bytes", tc.name, len(e.Value))
		}
		if v, err := DecodeValue(e); err != nil || !bytes.Equal(v, tc.value) {
			t.Fatalf("%s: DecodeValue: %v", tc.name, err)
		}
		if g, err := s.Get(tc.name, 0, t0); err != nil || g.Compressed || !bytes.Equal(g.Value, tc.value) {
			t.Fatalf("%s: Get: %v", tc.name, err)
		}
	}
	a, _ := EncodeValue(repetitive)
	b, _ := EncodeValue(repetitive)
	if !bytes.Equal(a, b) {
		t.Fatal("EncodeValue is not deterministic")
	}
	for name, corrupt := range map[string]*memoryv1.Entry{
		"flipped":   {Value: flip(a, len(a)/2), Compressed: true, Size: 10_000},
		"truncated": {Value: a[:len(a)-5], Compressed: true, Size: 10_000},
		"size":      {Value: a, Compressed: true, Size: 9_999},
		"garbage":   {Value: []byte("not zstd"), Compressed: true, Size: 3},
		"raw size":  {Value: []byte("abc"), Size: 4},
		"huge":      {Value: a, Compressed: true, Size: MaxValueBytes + 1},
	} {
		if _, err := DecodeValue(corrupt); !errors.Is(err, ErrCorruptValue) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := Plain(corrupt); err == nil {
			t.Errorf("%s: Plain accepted it", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0xff
	return c
}

func TestLimits(t *testing.T) {
	s := New(KindUser, "u1")
	big := make([]byte, MaxValueBytes+1)
	_, err := s.DecidePut(&memoryv1.PutEntryRequest{Key: "k", Value: big}, "u", env(t0))
	var r *Rejection
	if !errors.As(err, &r) || r.Code != 413 || r.Field != "value" || !strings.Contains(r.Reason, "1048577") || !strings.Contains(r.Reason, "1048576") {
		t.Fatalf("1 MiB + 1: %v", err)
	}
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: big[:MaxValueBytes]}, t0)
	tags := make([]string, MaxTags+1)
	for i := range tags {
		tags[i] = string(rune('a'+i%26)) + strings.Repeat("x", i)
	}
	md := map[string]string{}
	for i := range MaxMetadata + 1 {
		md[string(rune('a'+i%26))+strings.Repeat("m", i)] = "v"
	}
	for _, tc := range []struct {
		req   *memoryv1.PutEntryRequest
		field string
	}{
		{&memoryv1.PutEntryRequest{Key: "k", Importance: 1.01}, "importance"},
		{&memoryv1.PutEntryRequest{Key: "k", Importance: -0.1}, "importance"},
		{&memoryv1.PutEntryRequest{Key: "k", TtlSeconds: -1}, "ttl_seconds"},
		{&memoryv1.PutEntryRequest{Key: "k", MemoryType: 9}, "memory_type"},
		{&memoryv1.PutEntryRequest{Key: "k", Tags: tags}, "tags"},
		{&memoryv1.PutEntryRequest{Key: "k", Tags: []string{"a", "a"}}, "tags"},
		{&memoryv1.PutEntryRequest{Key: "k", Tags: []string{strings.Repeat("t", MaxTagBytes+1)}}, "tags"},
		{&memoryv1.PutEntryRequest{Key: "k", Metadata: md}, "metadata"},
		{&memoryv1.PutEntryRequest{Key: "k", Metadata: map[string]string{"k": strings.Repeat("v", MaxMetadataBytes)}}, "metadata"},
		{&memoryv1.PutEntryRequest{Key: ".k"}, "key"},
	} {
		_, err := s.DecidePut(tc.req, "u", env(t0))
		wantCode(t, err, 400, tc.field)
	}
}
