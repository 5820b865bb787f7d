package inspector_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var benchScopes = flag.Int("bench.scopes", 500, "workflow scopes of 3 entries each (BenchmarkDirectory)")

// BenchmarkDirectory measures the scopes directory's first page (50 rows:
// the log's subjects, then one API list per row) and its search (one API
// search in each of the first 20 scopes) with -bench.scopes scopes.
func BenchmarkDirectory(b *testing.B) {
	u := startNode(b, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				for k := range 3 {
					if _, err := u.c.Put(ctx, client.Workflow(fmt.Sprintf("w%05d", i)), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("step/%d", k),
						Value: []byte(fmt.Sprintf("step %d of workflow %d: review the release notes", k, i))}); err != nil {
						b.Error(err)
					}
				}
			}
		}()
	}
	for i := range *benchScopes {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := u.n.WaitProjected(ctx, u.c.LastWriteSeq()); err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, path string }{
		{fmt.Sprintf("page1/scopes=%d", *benchScopes), "/ui/scopes"},
		{fmt.Sprintf("filtered/scopes=%d", *benchScopes), "/ui/scopes?kind=workflow&match=w0001"},
		{fmt.Sprintf("search/scopes=%d", *benchScopes), "/ui/scopes?q=release"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if code, body := get(b, u.base, p.path, nil, "", ""); code != 200 {
					b.Fatalf("%d %.300s", code, body)
				}
			}
		})
	}
}
