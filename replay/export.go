package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentmem/agentmem/events"
	"google.golang.org/protobuf/encoding/protojson"
)

// ExportLine is one line of an export: one stream message.
//
// Batch is the protojson EventBatch (events as google.protobuf.Any with
// their full type name). Data (base64 of the stored bytes) replaces it only
// for a message whose events this build cannot render as JSON (an old event
// type without a registered Go type); Import accepts either.
type ExportLine struct {
	// Partition is the log partition of the message's stream, absent with
	// the log in one stream (an export of K partitions lists partition 0's
	// messages, then 1's, ...; Seq is the partition stream's).
	Partition *int            `json:"partition,omitempty"`
	Seq       uint64          `json:"seq"`
	Subject   string          `json:"subject"`
	Time      time.Time       `json:"time"`
	Batch     json.RawMessage `json:"batch,omitempty"`
	Data      []byte          `json:"data,omitempty"`
}

// ExportConfig configures Export.
type ExportConfig struct {
	Conn
	// Partitions > 1 exports the log in that many partition streams
	// (node --log-partitions), one after the other.
	Partitions int
}

// ExportStats counts what Export wrote.
type ExportStats struct {
	Messages uint64
	Bytes    uint64 // of the stored payloads
	Raw      uint64 // lines written with Data instead of Batch
}

// Export writes the stream to w as JSON lines (ExportLine), one per stored
// message, in stream order, up to the last message stored when it started.
func Export(ctx context.Context, cfg ExportConfig, w io.Writer) (ExportStats, error) {
	var st ExportStats
	l, err := cfg.dial() // validates cfg
	if err != nil {
		return st, err
	}
	defer l.close()
	if cfg.Partitions, err = l.partitionsOf(ctx, cfg.Partitions); err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	mo := protojson.MarshalOptions{UseProtoNames: true}
	var part *int
	write := func(r record) error {
		line := ExportLine{Partition: part, Seq: r.Seq, Subject: r.Subject, Time: r.Time.UTC()}
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return fmt.Errorf("replay: export seq %d (%s): %w", r.Seq, r.Subject, err)
		}
		if js, err := mo.Marshal(b); err == nil {
			line.Batch = js
		} else {
			line.Data = r.Data
			st.Raw++
		}
		if err := enc.Encode(&line); err != nil {
			return fmt.Errorf("replay: export: write: %w", err)
		}
		st.Messages++
		st.Bytes += uint64(len(r.Data))
		return nil
	}
	if cfg.Partitions > 1 {
		err = l.scanPartitions(ctx, cfg.Partitions, func(i int) { part = &i }, write)
	} else {
		err = l.scan(ctx, "", write)
	}
	if err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("replay: export: write: %w", err)
	}
	return st, nil
}
