package segmented

import (
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// MaxSchemas is the size of the Kernel's schema cache (LRU).
const MaxSchemas = 10

// DecideKernel decides one Kernel (or ROM) operation; req.Op must be set.
// The Kernel and a pending ROM count in the budget, so the batch may also
// hold compression events; when the budget cannot hold the change, 413.
//
//   - define_tool: KernelToolDefined (replaces a tool of the same name);
//   - remove_tool: KernelToolRemoved (404 when absent);
//   - cache_schema: KernelSchemaCached; re-caching a name makes it the most
//     recent; the least recently used beyond MaxSchemas are evicted;
//   - set_fact / delete_fact: KernelFactSet / KernelFactDeleted (404);
//   - update_rom: RomUpdated, the next ROM version, active from the next
//     turn (see DecideAppend).
func (s *State) DecideKernel(req *memoryv1.KernelRequest, env Env) ([]proto.Message, error) {
	if req == nil {
		return nil, badRequest("", "empty request")
	}
	if err := validateLabel("command_id", req.CommandId); err != nil {
		return nil, err
	}
	ev, field, err := s.kernelEvent(req, env)
	if err != nil {
		return nil, err
	}
	// Simulate the events on s itself, then roll them back.
	before := s.PlannedTokens()
	s.begin(false)
	defer s.rollback()
	if err := s.applyEvent(ev, env.NowUnixNano); err != nil {
		return nil, fmt.Errorf("segmented: decided an inconsistent event: %w", err)
	}
	out := []proto.Message{ev}
	if s.PlannedTokens() > before {
		comp, err := compress(s, env)
		if err != nil {
			return nil, err
		}
		out = append(out, comp...)
		fit, err := s.fitView(env)
		if err != nil {
			return nil, err
		}
		out = append(out, fit...)
	}
	if err := checkBudget(s.Budget(), before, s.PlannedTokens(), field, func() string { return "the " + field + " change" }); err != nil {
		return nil, err
	}
	return out, nil
}

// kernelEvent validates the operation against the state and returns its
// event and the request field it came from.
func (s *State) kernelEvent(req *memoryv1.KernelRequest, env Env) (proto.Message, string, error) {
	if req.Op == nil {
		return nil, "op", badRequest("op", "an operation is required")
	}
	if err := s.mutable("change the kernel"); err != nil {
		return nil, "", err
	}
	if env.Tokenizer == nil {
		return nil, "", errNoTokenizer
	}
	k := s.snap.GetKernel()
	switch op := req.Op.(type) {
	case *memoryv1.KernelRequest_DefineTool:
		t := op.DefineTool
		if err := validateName("define_tool.name", t.GetName()); err != nil {
			return nil, "", err
		}
		if err := validateText("define_tool.description", t.GetDescription()); err != nil {
			return nil, "", err
		}
		if err := validateJSON("define_tool.parameters_json", t.GetParametersJson()); err != nil {
			return nil, "", err
		}
		def := &memoryv1.ToolDefinition{Name: t.Name, Description: t.Description, ParametersJson: t.ParametersJson}
		def.Tokens = textTokens(env.Tokenizer, renderTool(def))
		return &memoryv1.KernelToolDefined{Tool: def}, "define_tool", nil
	case *memoryv1.KernelRequest_RemoveTool:
		if err := validateName("remove_tool", op.RemoveTool); err != nil {
			return nil, "", err
		}
		if !slices.ContainsFunc(k.GetTools(), func(t *memoryv1.ToolDefinition) bool { return t.Name == op.RemoveTool }) {
			return nil, "", reject(CodeNotFound, "remove_tool", "no tool %q", op.RemoveTool)
		}
		return &memoryv1.KernelToolRemoved{Name: op.RemoveTool}, "remove_tool", nil
	case *memoryv1.KernelRequest_CacheSchema:
		sc := op.CacheSchema
		if err := validateName("cache_schema.name", sc.GetName()); err != nil {
			return nil, "", err
		}
		if err := validateText("cache_schema.schema", sc.GetSchema()); err != nil {
			return nil, "", err
		}
		e := &memoryv1.SchemaEntry{Name: sc.Name, Schema: sc.Schema}
		e.Tokens = textTokens(env.Tokenizer, renderSchema(e))
		var names []string
		for _, x := range k.GetSchemas() {
			if x.Name != e.Name {
				names = append(names, x.Name)
			}
		}
		ev := &memoryv1.KernelSchemaCached{Schema: e}
		if extra := len(names) + 1 - MaxSchemas; extra > 0 {
			ev.Evicted = names[:extra]
		}
		return ev, "cache_schema", nil
	case *memoryv1.KernelRequest_SetFact:
		f := op.SetFact
		if err := validateName("set_fact.key", f.GetKey()); err != nil {
			return nil, "", err
		}
		if err := validateText("set_fact.value", f.GetValue()); err != nil {
			return nil, "", err
		}
		fact := &memoryv1.Fact{Key: f.Key, Value: f.Value}
		fact.Tokens = textTokens(env.Tokenizer, renderFact(fact))
		return &memoryv1.KernelFactSet{Fact: fact}, "set_fact", nil
	case *memoryv1.KernelRequest_DeleteFact:
		if err := validateName("delete_fact", op.DeleteFact); err != nil {
			return nil, "", err
		}
		if !slices.ContainsFunc(k.GetFacts(), func(f *memoryv1.Fact) bool { return f.Key == op.DeleteFact }) {
			return nil, "", reject(CodeNotFound, "delete_fact", "no fact %q", op.DeleteFact)
		}
		return &memoryv1.KernelFactDeleted{Key: op.DeleteFact}, "delete_fact", nil
	case *memoryv1.KernelRequest_UpdateRom:
		r := op.UpdateRom
		if err := validateText("update_rom.system_prompt", r.GetSystemPrompt()); err != nil {
			return nil, "", err
		}
		if len(r.GetPatterns()) > MaxPatterns {
			return nil, "", reject(CodeTooLarge, "update_rom.patterns", "at most %d patterns, got %d", MaxPatterns, len(r.GetPatterns()))
		}
		for i, p := range r.GetPatterns() {
			if err := validateText(fmt.Sprintf("update_rom.patterns[%d]", i), p); err != nil {
				return nil, "", err
			}
		}
		if err := validateText("update_rom.backend_schema", r.GetBackendSchema()); err != nil {
			return nil, "", err
		}
		rom := &memoryv1.Rom{
			Version:       max(s.snap.GetRom().GetVersion(), s.snap.GetPendingRom().GetVersion()) + 1,
			SystemPrompt:  r.SystemPrompt,
			Patterns:      slices.Clone(r.Patterns),
			BackendSchema: r.BackendSchema,
		}
		rom.Tokens = romTokenCount(env.Tokenizer, rom)
		if base := s.romBase(); len(base.GetLibraries()) > 0 {
			// The session's libraries stay: the new ROM is the given
			// patterns followed by the libraries' as the base ROM has them
			// (a library's change arrives at a turn, see libraryUpdate).
			rom = keepLibraries(rom, base, env.Tokenizer)
		}
		return &memoryv1.RomUpdated{Rom: rom}, "update_rom", nil
	default:
		return nil, "", badRequest("op", "unknown operation %T", req.Op)
	}
}

// validateName checks a Kernel name or key: 1..128 characters of
// [A-Za-z0-9_.:-].
func validateName(field, name string) error {
	if name == "" {
		return badRequest(field, "required")
	}
	if len(name) > MaxIDLen {
		return badRequest(field, "longer than %d characters", MaxIDLen)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !isIDRune(r) && r != '.' && r != ':' }); i >= 0 {
		return badRequest(field, "may only contain [A-Za-z0-9_.:-], got %q", name[i:i+1])
	}
	return nil
}
