package events_test

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/events"
)

func ExampleLog_Append() {
	ctx := context.Background()
	var log events.Log = events.NewMemLog()
	subj := events.SessionSubject("s1")

	res, _ := log.Append(ctx, subj, 0, "cmd-1", []byte("batch 1"))
	fmt.Println("stored at", res.Seq)

	// A retry (after an unknown outcome) with the same msgID is a duplicate.
	dup, _ := log.Append(ctx, subj, 0, "cmd-1", []byte("batch 1"))
	fmt.Println("duplicate:", dup.Duplicate, dup.Seq)

	// A writer with a stale expectation loses.
	_, err := log.Append(ctx, subj, 0, "cmd-2", []byte("batch 2"))
	fmt.Println(err)

	last, _ := log.Load(ctx, subj, 0, func(r events.Record) error {
		fmt.Printf("%s %d %s\n", r.Subject, r.Seq, r.Data)
		return nil
	})
	fmt.Println("loaded up to", last)
	// Output:
	// stored at 1
	// duplicate: true 1
	// events: conflict on mem.ev.session.s1: expected last sequence 0 does not match
	// mem.ev.session.s1 1 batch 1
	// loaded up to 1
}
