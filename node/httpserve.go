package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmem/agentmem/api/httpapi"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/tenancy"
)

// listenHTTP opens the HTTP listener first thing, so that a node waiting
// for its NATS cluster can be watched: /healthz answers 503 "starting" with
// what it waits for, /metrics serves, and every other path answers 503
// until serveAll mounts the API and the inspector. A taken address fails
// Start at once.
func (n *Node) listenHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("node: http listen: %w", err)
	}
	n.httpAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", n.serveHealthz)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		n.writeHealth(w, n.health())
	})
	n.handler.Store(mux)
	// No WriteTimeout: the watch streams (Server-Sent Events) last.
	n.http = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.handler.Load().ServeHTTP(w, r) }),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	n.httpDone = make(chan struct{})
	go func() {
		defer close(n.httpDone)
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.logger.Error("metrics server stopped", "err", err)
		}
	}()
	return nil
}

// serveAll mounts everything on the listener once the node is up: the
// API (/v1/), the inspector (/ui/), /metrics and /healthz.
func (n *Node) serveAll(tenants *tenancy.Directory) error {
	icfg := inspector.DefaultConfig()
	icfg.AllowedHosts = n.cfg.UIAllowedHosts
	if tenants == nil {
		// The node's own users may not publish into the API (no confused
		// deputy): on the embedded single-user server the inspector is an
		// anonymous client like any agent; elsewhere it uses the node's
		// credentials, which the operator's NATS config must let call it.
		var opts []nats.Option
		if n.cfg.NATSURL != "" || n.cfg.NATSConfig != "" {
			opts = credentials(n.cfg.NATSUser, n.cfg.NATSPassword, n.cfg.NATSCreds)
		}
		var err error
		if n.uiNC, err = nats.Connect(n.url, append(opts, nats.Name("agentmem-inspector"), nats.MaxReconnects(-1))...); err != nil {
			return fmt.Errorf("node: inspector: connect %s: %w", n.url, err)
		}
	}
	// The inspector's live pages read the log with a watcher of their own
	// (its own bound on reads in flight) rather than the API's watch, so
	// they take none of the agents' watch slots (max_watches).
	var live inspector.Watcher
	if n.reader != nil {
		live = n.watcher(n.reader, maxInspectorWatchReads)
	}
	ui, err := inspector.New(icfg, inspector.Deps{Conn: n.uiNC, Tenants: tenants, NATSURL: n.url, Log: n.log, Reader: n.reader, Stream: n.stream, Watcher: live, Logger: n.logger})
	if err != nil {
		return fmt.Errorf("node: inspector: %w", err)
	}
	n.inspector = ui
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", n.serveHealthz)
	mux.Handle(inspector.Prefix, ui)
	mux.Handle("/ui", http.RedirectHandler(inspector.Prefix, http.StatusMovedPermanently))
	mux.Handle("/", httpapi.NotFound())
	if n.svc != nil {
		hcfg := httpapi.DefaultConfig()
		hcfg.MaxBodyBytes, hcfg.Origins = n.apiNC.MaxPayload(), n.cfg.HTTPOrigins
		mux.Handle(httpapi.Prefix, httpapi.New(n.disp, hcfg))
	}
	n.handler.Store(mux)
	return nil
}
