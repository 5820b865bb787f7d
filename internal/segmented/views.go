package segmented

import memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"

// Kernel returns the Kernel, the active ROM and the pending ROM (nil if
// none). They are shared with the state: read-only, valid until the next
// Apply replaces them (Apply never mutates them in place).
func (s *State) Kernel() (kernel *memoryv1.Kernel, rom, pendingRom *memoryv1.Rom) {
	return s.snap.GetKernel(), s.snap.GetRom(), s.snap.GetPendingRom()
}

// CheckMutable reports whether the session accepts state changes now (404
// before creation, 409 once TERMINATED or ARCHIVED): the rule every Decide
// of a mutation applies, for changes that never reach the log ("temp:" keys).
func (s *State) CheckMutable(what string) error { return s.mutable(what) }
