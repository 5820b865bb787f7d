package natsembed

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// JetStreamEnabled reports whether JetStream runs. The server turns it off
// by itself on some storage faults (out of space in a cluster, a permission
// error while writing); RestartJetStream turns it back on.
func (s *Server) JetStreamEnabled() bool { return s.ns.JetStreamEnabled() }

// StoreFaults returns what the server's own health check (the /healthz of
// nats-server, with details) reports about JetStream: streams with a write
// error (a full disk: the file store keeps its first write error and refuses
// every later write, without answering the publisher), streams that could
// not be recovered, JetStream off. Empty when healthy.
func (s *Server) StoreFaults() []string {
	h := s.ns.Healthz(&server.HealthzOptions{Details: true})
	if h == nil || len(h.Errors) == 0 {
		return nil
	}
	out := make([]string, 0, len(h.Errors))
	for _, e := range h.Errors {
		out = append(out, e.Error)
	}
	return out
}

// RestartJetStream stops JetStream if it runs, then starts it again with
// the configuration the server started with, as nats-server does when a
// config reload re-enables it. Every stream and bucket is reopened from
// the store directory, which clears a file store's latched write error once
// the disk has room again; a torn last record is truncated on reopening,
// as after a crash. Connections stay up; consumers are recreated by their
// clients (ordered consumers reset themselves). It returns once every
// stream on disk is loaded again (at most 10 s).
func (s *Server) RestartJetStream() error {
	s.restart.Lock()
	defer s.restart.Unlock()
	if s.ns.JetStreamEnabled() {
		if err := s.ns.ShutdownJetStream(); err != nil {
			return fmt.Errorf("natsembed: stop JetStream: %w", err)
		}
	}
	o := s.opts
	cfg := &server.JetStreamConfig{
		StoreDir:     o.StoreDir,
		SyncInterval: o.SyncInterval,
		SyncAlways:   o.SyncAlways,
		Strict:       !o.NoJetStreamStrict,
		MaxMemory:    o.JetStreamMaxMemory,
		MaxStore:     o.JetStreamMaxStore,
		Domain:       o.JetStreamDomain,
		CompressOK:   true,
		UniqueTag:    o.JetStreamUniqueTag,
	}
	if err := s.ns.EnableJetStream(cfg); err != nil {
		return fmt.Errorf("natsembed: start JetStream: %w", err)
	}
	// JetStream answers before every stream is loaded again: until then a
	// stream on disk is "not found" (a projector would take it for deleted).
	// The server's health check lists the streams on disk not loaded yet.
	deadline := time.Now().Add(restartReady)
	for {
		faults := s.StoreFaults()
		if len(faults) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natsembed: JetStream restarted but not ready after %s: %s", restartReady, strings.Join(faults, "; "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restartReady bounds RestartJetStream's wait for the streams to load.
const restartReady = 10 * time.Second

// StoreUsage returns the bytes JetStream stores on disk and the most it
// may store (max_file_store; without one, the disk space free when
// JetStream started). ok is false while JetStream is off. Once used
// exceeds limit the server refuses every write with "insufficient
// resources" until space is freed.
func (s *Server) StoreUsage() (used, limit int64, ok bool) {
	if !s.ns.JetStreamEnabled() {
		return 0, 0, false
	}
	info, err := s.ns.Jsz(nil)
	if err != nil || info == nil {
		return 0, 0, false
	}
	return int64(info.Store), info.Config.MaxStore, true
}
