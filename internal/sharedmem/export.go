package sharedmem

import (
	"encoding/base64"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Export and import limits.
const (
	DefaultExportKeys = 100
	MaxExportKeys     = 200
	// MaxExportPageBytes bounds the original value bytes of one export page
	// (base64 in JSON makes it about 5.4 MiB, under the node's 8 MiB
	// message); a page always holds at least one key's current version.
	MaxExportPageBytes = 4 << 20
	// MaxImportKeys bounds the keys of one import request, so its batch
	// stays one log message.
	MaxImportKeys = 500
)

// Export returns a page of the scope's keys with prefix after the page
// token, each with its kept versions (original values), oldest first: at
// most limit keys (1..200, 0 = 100) and maxBytes of values (0 =
// MaxExportPageBytes). A key whose history does not fit keeps its newest
// versions and is named in truncated. The token is List's. It rejects with
// 400 (limit, page_token).
func (s *State) Export(req *memoryv1.ExportEntriesRequest, maxBytes int) (keys []*memoryv1.KeyHistory, next string, truncated []string, err error) {
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = DefaultExportKeys
	case limit > MaxExportKeys:
		return nil, "", nil, badRequest("limit", "must be 1..%d, got %d", MaxExportKeys, limit)
	}
	if maxBytes <= 0 || maxBytes > MaxExportPageBytes {
		maxBytes = MaxExportPageBytes
	}
	i, err := s.after(req.GetPrefix(), req.GetPageToken())
	if err != nil {
		return nil, "", nil, err
	}
	used := 0
	for _, kh := range s.snap.Keys[i:] {
		if !strings.HasPrefix(kh.Key, req.GetPrefix()) {
			break
		}
		if len(keys) == limit || (len(keys) > 0 && used+int(last(kh).Size) > maxBytes) {
			return keys, pageToken(keys[len(keys)-1].Key), truncated, nil
		}
		out := &memoryv1.KeyHistory{Key: kh.Key}
		for j, e := range slices.Backward(kh.Versions) {
			if j < len(kh.Versions)-1 && used+int(e.Size) > maxBytes {
				truncated = append(truncated, kh.Key)
				break
			}
			p, err := s.plain(e)
			if err != nil {
				return nil, "", nil, err
			}
			used += int(e.Size)
			out.Versions = append(out.Versions, p)
		}
		slices.Reverse(out.Versions)
		keys = append(keys, out)
	}
	return keys, "", truncated, nil
}

// after is the index of the first key with prefix after the page token.
func (s *State) after(prefix, token string) (int, error) {
	i := s.search(prefix)
	if token == "" {
		return i, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || ValidateKey(string(b)) != nil {
		return 0, badRequest("page_token", "not a token this scope returned")
	}
	j := s.search(string(b))
	if j < len(s.snap.Keys) && s.snap.Keys[j].Key == string(b) {
		j++
	}
	return max(i, j), nil
}

func pageToken(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }
