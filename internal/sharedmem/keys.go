package sharedmem

import (
	"math"
	"unicode/utf8"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Limits of an entry. Requests beyond them are rejected (413 for the value,
// 400 otherwise).
const (
	MaxKeyBytes       = 256
	MaxValueBytes     = 1 << 20 // original (uncompressed) bytes
	CompressThreshold = 1 << 10 // values at least this long are compressed when that is smaller
	MaxTags           = 32
	MaxTagBytes       = 64
	MaxMetadata       = 32      // metadata pairs
	MaxMetadataBytes  = 4 << 10 // sum of the metadata keys and values
	MaxVersionsPerKey = 1000    // older versions are dropped from the history
	MaxContentType    = 256
	// MaxTTLSeconds bounds ttl_seconds and episodic_ttl_seconds (100 years).
	MaxTTLSeconds = 100 * 365 * 24 * 3600
	// NeverExpires as a scope's episodic_ttl_seconds: its episodic entries
	// written without a ttl never expire (0 takes the node's default).
	NeverExpires = -1
)

// Conflict strategies of a scope (ScopeConfig.conflict_strategy): how
// consolidation settles a new value for a fact the scope holds.
const (
	StrategyLastWriteWins = "last_write_wins" // the default ("")
	StrategyReview        = "review"
	StrategyLLM           = "llm" // an LLM merges the two values; last write wins without one
)

// ValidateKey checks an entry key: 1..256 bytes of [A-Za-z0-9_.:/@-], not
// starting with '.', '/' or ':'. It returns a 400 *Rejection on field "key".
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return badRequest("key", "must be 1..%d bytes, got %d", MaxKeyBytes, len(key))
	}
	switch key[0] {
	case '.', '/', ':':
		return badRequest("key", "must not start with %q", key[0])
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if isAlnum(c) {
			continue
		}
		switch c {
		case '_', '.', ':', '/', '@', '-':
			continue
		}
		return badRequest("key", "byte %d (%s) is not one of [A-Za-z0-9_.:/@-]", i, ByteName(c))
	}
	return nil
}

// content is what a put-like command writes, before encoding.
type content struct {
	value       []byte // original bytes
	contentType string
	memoryType  memoryv1.MemoryType
	importance  float64
	tags        []string
	metadata    map[string]string
}

// validateContent checks everything but the key, and normalizes the memory
// type (UNSPECIFIED is stored as SEMANTIC).
func validateContent(c *content) error {
	if len(c.value) > MaxValueBytes {
		return reject(CodeTooLarge, "value", "value is %d bytes, the limit is %d", len(c.value), MaxValueBytes)
	}
	if len(c.contentType) > MaxContentType {
		return badRequest("content_type", "must be at most %d bytes, got %d", MaxContentType, len(c.contentType))
	}
	if _, ok := memoryv1.MemoryType_name[int32(c.memoryType)]; !ok {
		return badRequest("memory_type", "unknown memory type %d", c.memoryType)
	}
	if c.memoryType == memoryv1.MemoryType_MEMORY_TYPE_UNSPECIFIED {
		c.memoryType = memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC
	}
	if math.IsNaN(c.importance) || c.importance < 0 || c.importance > 1 {
		return badRequest("importance", "must be in [0, 1], got %v", c.importance)
	}
	if err := validateTags(c.tags); err != nil {
		return err
	}
	return validateMetadata(c.metadata)
}

func validateTags(tags []string) error {
	if len(tags) > MaxTags {
		return badRequest("tags", "at most %d tags, got %d", MaxTags, len(tags))
	}
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		if t == "" || len(t) > MaxTagBytes || !utf8.ValidString(t) {
			return badRequest("tags", "tag %d must be 1..%d bytes of UTF-8", i, MaxTagBytes)
		}
		if seen[t] {
			return badRequest("tags", "duplicate tag %q", t)
		}
		seen[t] = true
	}
	return nil
}

func validateMetadata(md map[string]string) error {
	if len(md) > MaxMetadata {
		return badRequest("metadata", "at most %d pairs, got %d", MaxMetadata, len(md))
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return badRequest("metadata", "empty key")
		}
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return badRequest("metadata", "%d bytes, the limit is %d", n, MaxMetadataBytes)
	}
	return nil
}

func validateTTL(field string, ttl int64) error {
	if ttl < 0 || ttl > MaxTTLSeconds {
		return badRequest(field, "must be in [0, %d] seconds, got %d", MaxTTLSeconds, ttl)
	}
	return nil
}

// validateExpected checks the form of an expected version: unset, -1, 0 or
// a version.
func validateExpected(ev *int64) error {
	if ev != nil && *ev < -1 {
		return badRequest("expected_version", "must be -1 (any), 0 (must not exist) or a version, got %d", *ev)
	}
	return nil
}

// checkExpected compares an expected version with the key's current version
// (cur may be nil: no version). A tombstone counts as not existing for 0.
func checkExpected(ev *int64, cur *memoryv1.Entry) error {
	if ev == nil || *ev == -1 {
		return nil
	}
	v := cur.GetVersion()
	if *ev == 0 {
		if cur != nil && !cur.Deleted {
			return reject(CodeConflict, "expected_version", "expected version 0, current is %d", v)
		}
		return nil
	}
	if uint64(*ev) != v {
		return reject(CodeConflict, "expected_version", "expected version %d, current is %d", *ev, v)
	}
	return nil
}
