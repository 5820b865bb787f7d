package largedata_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/largedata"
)

func ExampleStore() {
	dir, _ := os.MkdirTemp("", "largedata-example")
	defer os.RemoveAll(dir)
	cfg := natsembed.DefaultConfig()
	cfg.DataDir, cfg.Listen = dir, "127.0.0.1:-1"
	srv, err := natsembed.Start(cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	ctx := context.Background()
	log, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
	if err != nil {
		panic(err)
	}
	store, err := largedata.New(ctx, js, log, largedata.DefaultConfig(), time.Now)
	if err != nil {
		panic(err)
	}

	ref, _, err := store.Put(ctx, []byte("a large tool result"), "text/plain", map[string]string{"tool": "grep"}, time.Hour)
	if err != nil {
		panic(err)
	}
	_, data, err := store.Get(ctx, ref.GetId())
	if err != nil {
		panic(err)
	}
	fmt.Println(string(data), ref.GetSize(), ref.GetCompressed())
	// Output: a large tool result 19 false
}
