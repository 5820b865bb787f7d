package segmented

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// PatternKeyPrefix is where pattern libraries live in the global and app
// scopes: library L is the live entries under "patterns/L/". Their text
// is in the ROM of the sessions that name them, so the context assembler
// never offers those entries again as memory.
const PatternKeyPrefix = "patterns/"

// Pattern libraries: named sets of patterns shared by many sessions (the
// entries patterns/<library>/<name> of the session's app scope, or else of
// the global scope). A session names its libraries at create; its ROM
// holds its own patterns followed by each library's patterns as they were
// when the ROM was built, with the library's digest and the scope it came
// from (Rom.libraries). The ROM is recorded in the session's
// events, so replay and time travel never read a library again.
//
// A library changes what a session says only from a turn boundary: when a
// user message starts a turn, the decision reads the libraries (Env.Libraries)
// and, when a digest or a scope differs from the ROM the turn would use
// (the app scope took the name over, or gave it back), stages the new
// ROM version (RomUpdated) in the same batch that activates it
// (RomActivated). A turn in flight (tool calls pending, no user message)
// keeps its ROM; a session that names no library never reads one; a
// session that is not live simply finds the change at its next user
// message. Pulling at the turn boundary needs no subscription and no
// registry of live sessions, and is deterministic: the library's text is in
// the event.

// Library is one pattern library's current patterns, in key order, and the
// scope they were read from ("app:<app>", or "" for the global scope).
type Library struct {
	Name     string
	Patterns []string
	Scope    string
}

// LibrarySource reads the current patterns of the named libraries for a
// session of app ("" for none), one Library per name, in the order given:
// a name the app scope holds patterns of is the app's library, any other
// the global scope's. The app is the session's, checked when it was
// created (its creator is a member of the app), never a caller's claim.
type LibrarySource func(app string, names []string) ([]Library, error)

// Library bounds.
const (
	// MaxLibraries is how many libraries a session may name.
	MaxLibraries = 8
	// MaxLibraryPatterns is how many patterns of one library a ROM takes
	// (the first, in key order).
	MaxLibraryPatterns = 64
)

// CodeUnavailable: the decision needs something the node cannot give now.
const CodeUnavailable = 503

// validateLibraries checks a create's pattern_libraries: at most
// MaxLibraries distinct names of [A-Za-z0-9_-]{1,128}.
func validateLibraries(names []string) error {
	if len(names) > MaxLibraries {
		return reject(CodeTooLarge, "pattern_libraries", "at most %d libraries, got %d", MaxLibraries, len(names))
	}
	for i, n := range names {
		field := fmt.Sprintf("pattern_libraries[%d]", i)
		if !scopeIDRule.MatchString(n) {
			return badRequest(field, "%q is not [A-Za-z0-9_-]{1,128}", n)
		}
		if slices.Contains(names[:i], n) {
			return badRequest(field, "%q named twice", n)
		}
	}
	return nil
}

// readLibraries reads names for a session of app through env, checking the
// source answered one library per name, in order.
func readLibraries(env Env, app string, names []string) ([]Library, error) {
	if env.Libraries == nil {
		return nil, reject(CodeUnavailable, "pattern_libraries", "this node cannot read pattern libraries (it runs no projection)")
	}
	libs, err := env.Libraries(app, names)
	if err != nil {
		return nil, reject(CodeUnavailable, "pattern_libraries", "reading the libraries: %v", err)
	}
	if len(libs) != len(names) {
		return nil, fmt.Errorf("segmented: the library source answered %d libraries for %d names", len(libs), len(names))
	}
	for i := range libs {
		if libs[i].Name != names[i] {
			return nil, fmt.Errorf("segmented: the library source answered %q for %q", libs[i].Name, names[i])
		}
		if len(libs[i].Patterns) > MaxLibraryPatterns {
			libs[i].Patterns = libs[i].Patterns[:MaxLibraryPatterns]
		}
	}
	return libs, nil
}

// LibraryDigest is the hex SHA-256 of patterns, each length-prefixed: equal
// digests, equal patterns in the same order.
func LibraryDigest(patterns []string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range patterns {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ownPatterns are the ROM's patterns that are the session's own (before
// its libraries').
func ownPatterns(r *memoryv1.Rom) []string {
	n := 0
	for _, l := range r.GetLibraries() {
		n += int(l.GetPatterns())
	}
	ps := r.GetPatterns()
	return ps[:max(len(ps)-n, 0)]
}

// libraryNames are the names of the libraries r was built with.
func libraryNames(r *memoryv1.Rom) []string {
	names := make([]string, len(r.GetLibraries()))
	for i, l := range r.GetLibraries() {
		names[i] = l.GetName()
	}
	return names
}

// withLibraries sets r's patterns to own followed by libs' and records the
// libraries; it counts r's tokens.
func withLibraries(r *memoryv1.Rom, own []string, libs []Library, tok Tokenizer) *memoryv1.Rom {
	r.Patterns = slices.Clone(own)
	r.Libraries = nil
	for _, l := range libs {
		r.Patterns = append(r.Patterns, l.Patterns...)
		r.Libraries = append(r.Libraries, &memoryv1.PatternLibrary{Name: l.Name, Digest: LibraryDigest(l.Patterns), Patterns: uint32(len(l.Patterns)), Scope: l.Scope})
	}
	r.Tokens = romTokenCount(tok, r)
	return r
}

// romBase is the ROM the next turn would use: the pending one, else the
// active one.
func (s *State) romBase() *memoryv1.Rom {
	if pr := s.snap.GetPendingRom(); pr != nil {
		return pr
	}
	return s.snap.GetRom()
}

// libraryUpdate is the RomUpdated a turn starting now takes when a library
// of the session's ROM changed since it was built; nil when none changed,
// the session names none, or the libraries cannot be read now (the session
// keeps its ROM; the next turn reads them again).
func (s *State) libraryUpdate(env Env) *memoryv1.RomUpdated {
	base := s.romBase()
	if len(base.GetLibraries()) == 0 || env.Libraries == nil {
		return nil
	}
	libs, err := readLibraries(env, s.snap.GetApp(), libraryNames(base))
	if err != nil {
		return nil
	}
	changed := false
	for i, l := range libs {
		was := base.GetLibraries()[i]
		changed = changed || LibraryDigest(l.Patterns) != was.GetDigest() || l.Scope != was.GetScope()
	}
	if !changed {
		return nil
	}
	rom := &memoryv1.Rom{
		Version:       max(s.snap.GetRom().GetVersion(), s.snap.GetPendingRom().GetVersion()) + 1,
		SystemPrompt:  base.GetSystemPrompt(),
		BackendSchema: base.GetBackendSchema(),
	}
	return &memoryv1.RomUpdated{Rom: withLibraries(rom, ownPatterns(base), libs, env.Tokenizer)}
}

// keepLibraries returns r (its own patterns set) with base's library
// patterns and records after them.
func keepLibraries(r, base *memoryv1.Rom, tok Tokenizer) *memoryv1.Rom {
	own := len(ownPatterns(base))
	r.Patterns = append(r.Patterns, base.GetPatterns()[own:]...)
	for _, l := range base.GetLibraries() {
		r.Libraries = append(r.Libraries, &memoryv1.PatternLibrary{Name: l.GetName(), Digest: l.GetDigest(), Patterns: l.GetPatterns(), Scope: l.GetScope()})
	}
	r.Tokens = romTokenCount(tok, r)
	return r
}
