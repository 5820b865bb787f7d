package sharedmem_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func ExampleState() {
	id, _ := sharedmem.ScopeID(sharedmem.KindUser, "alice")
	s := sharedmem.New(sharedmem.KindUser, "alice")
	now := int64(1_700_000_000_000_000_000)

	// Decide, append to the log (not shown), then apply.
	evs, err := s.DecidePut(&memoryv1.PutEntryRequest{
		CommandId: "c1", Key: "prefs/theme", Value: []byte("dark"), ExpectedVersion: new(int64(0)),
	}, "alice", sharedmem.Env{NowUnixNano: now})
	if err != nil {
		panic(err)
	}
	if err := s.Apply(sharedmem.Meta{CommandID: "c1", Version: s.Version() + 1, Seq: 1, TimeUnixNano: now}, evs); err != nil {
		panic(err)
	}

	e, _ := s.Get("prefs/theme", 0, now)
	fmt.Println(id, e.Key, string(e.Value), e.Version)

	// A second "must not exist" put conflicts.
	_, err = s.DecidePut(&memoryv1.PutEntryRequest{Key: "prefs/theme", ExpectedVersion: new(int64(0))}, "alice", sharedmem.Env{NowUnixNano: now})
	fmt.Println(err)
	// Output:
	// user:alice prefs/theme dark 1
	// expected_version: expected version 0, current is 1
}
