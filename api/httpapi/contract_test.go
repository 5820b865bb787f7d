package httpapi

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// TestContractRulesNameFields: every rule of the contract names a field of
// a message of the API, every message extra and doc a message (a typo
// would silently drop a rule from the document).
func TestContractRulesNameFields(t *testing.T) {
	messages := map[string]protoreflect.MessageDescriptor{}
	protoregistry.GlobalFiles.RangeFilesByPackage("agentmem.memory.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Messages().Len(); i++ {
			md := fd.Messages().Get(i)
			messages[string(md.Name())] = md
		}
		return true
	})
	for key := range fieldRules {
		msg, field, _ := strings.Cut(key, ".")
		md, ok := messages[msg]
		if !ok {
			t.Errorf("rule %s: no message %s", key, msg)
			continue
		}
		if md.Fields().ByName(protoreflect.Name(field)) == nil {
			t.Errorf("rule %s: %s has no field %s", key, msg, field)
		}
	}
	for name := range messageExtras {
		if _, ok := messages[name]; !ok {
			t.Errorf("messageExtras: no message %s", name)
		}
	}
	for name := range messageDocs {
		if _, ok := messages[name]; !ok {
			t.Errorf("messageDocs: no message %s", name)
		}
	}
}
