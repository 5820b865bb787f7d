package node_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/node"
)

// BenchmarkHTTPvsNATS measures append and context over the HTTP API beside
// the same JSON requests over NATS, in one run on one node (embedded NATS,
// file storage, sync default, a loopback HTTP client with keep-alive).
// Requests alternate between the transports so both see the same node
// state; each session takes 50 appends. It reports p50 and p99 per
// operation and transport, in microseconds.
//
//	go test -run '^$' -bench HTTPvsNATS -benchtime=2000x ./node/
func BenchmarkHTTPvsNATS(b *testing.B) {
	n, nc := node.StartForTest(b, func(c *node.Config) { c.HTTPAddr = "127.0.0.1:0" })
	base := "http://" + n.MetricsAddr()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	viaHTTP := func(path, body string) error {
		resp, err := hc.Post(base+path, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %d", path, resp.StatusCode)
		}
		return nil
	}
	viaNATS := func(subject, body string) error {
		m := nats.NewMsg(subject)
		m.Data = []byte(body)
		m.Header.Set("Content-Type", "application/json")
		rep, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			return err
		}
		if c := rep.Header.Get("Nats-Service-Error-Code"); c != "" {
			return fmt.Errorf("%s: %s %s", subject, c, rep.Header.Get("Nats-Service-Error"))
		}
		return nil
	}
	type op struct {
		name string
		do   func(id string, i int) error
	}
	appendBody := func(i int) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"message %d: the quarterly churn rate was 4.2 percent in the north region"}]}`, i)
	}
	ops := []op{
		{"http_append", func(id string, i int) error { return viaHTTP("/v1/session/h"+id+"/append", appendBody(i)) }},
		{"nats_append", func(id string, i int) error { return viaNATS("mem.v1.session.n"+id+".append", appendBody(i)) }},
		{"http_context", func(id string, i int) error { return viaHTTP("/v1/session/h"+id+"/context", `{"format":"openai"}`) }},
		{"nats_context", func(id string, i int) error { return viaNATS("mem.v1.session.n"+id+".context", `{"format":"openai"}`) }},
	}
	lat := make([][]time.Duration, len(ops))
	session := func(i int) string { return fmt.Sprint(i / 50) }
	create := func(i int) {
		if i%50 != 0 {
			return
		}
		id := session(i)
		if err := viaHTTP("/v1/session/h"+id+"/create", `{}`); err != nil {
			b.Fatal(err)
		}
		if err := viaNATS("mem.v1.session.n"+id+".create", `{}`); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		create(i)
		b.StartTimer()
		for j, o := range ops {
			start := time.Now()
			if err := o.do(session(i), i); err != nil {
				b.Fatal(err)
			}
			lat[j] = append(lat[j], time.Since(start))
		}
	}
	b.StopTimer()
	for j, o := range ops {
		slices.Sort(lat[j])
		p := func(q float64) float64 { return float64(lat[j][int(q*float64(len(lat[j])-1))].Microseconds()) }
		b.ReportMetric(p(0.50), o.name+"_p50_us")
		b.ReportMetric(p(0.99), o.name+"_p99_us")
	}
}
