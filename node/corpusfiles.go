package node

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// Split projections (--projection-partitions C): the read model is cut
// into C corpus partitions (projections/corpus.go), and each node keeps
// the files of the partitions it owns. The owners are computed from the
// live nodes (the placement's heartbeats) by every node alike, each
// getting C/N (corpusOwners).
// A node's file of c is read by its own projector over every log stream
// (its checkpoints are the log's position; it applies c's records only);
// once it has caught up with the log's end as it was when the node took
// c, the node answers c's reads on _AMN.corpus.<c> (queue
// group: during a hand-over two nodes may answer, both from a whole
// file). A partition the node no longer owns is served until its new
// owner answers it (asked on _AMN.corpusready.<c>.<node>, after a grace
// second), then its file is closed and deleted: a node keeps no copy it
// does not serve, so an erase cannot leave rows behind in a file nobody
// projects.

// heldFile is a partition file this node has open.
type heldFile struct {
	c      int
	f      corpusFile
	cancel context.CancelFunc
	done   chan struct{} // closed when its projector and catch-up stopped
	ready  atomic.Bool   // caught up and answering
	sub    atomic.Pointer[nats.Subscription]
	// readySub answers other nodes asking whether this node answers c
	// (corpusReadySubject).
	readySub atomic.Pointer[nats.Subscription]
	// lostAt is when the node stopped owning it (zero: owned).
	lostAt time.Time
}

// corpusFiles keeps this node's partition files in step with the owners.
type corpusFiles struct {
	parts int
	dir   string
	js    jetstream.JetStream
	codec *events.Codec
	pcfg  projections.Config
	// self is this node's id in live's list (placement's).
	self func() string
	// live lists the live nodes (any order); serve answers reads of a
	// ready file.
	live   func() []string
	serve  func(c int, f corpusFile) (*nats.Subscription, error)
	logger *slog.Logger
	// room bounds each file's growth (nil: none).
	room projections.RoomFunc
	// nc asks a partition's new owner whether it answers yet, and answers
	// that question for this node's partitions (nil: no such check, the
	// grace period alone).
	nc *nats.Conn
	// tick is how often owners are computed again; grace how long at least
	// a partition no longer owned is served still (until its new owner
	// answers, with nc).
	tick, grace time.Duration

	mu    sync.Mutex
	files map[int]*heldFile
}

// corpusFileRE names a partition file: projection.c<NN>.db.
var corpusFileRE = regexp.MustCompile(`^projection\.c(\d+)\.db$`)

func corpusFileName(c int) string { return fmt.Sprintf("projection.c%02d.db", c) }

// corpusOwners is the owner of each partition among the live nodes:
// rendezvous hashing bounded by load. Each partition, in order, goes to
// the live node that ranks it highest (FNV-1a of node and partition)
// among those holding fewer than ceil(C/N): every node computes the same
// owners, each gets C/N (±1), and when a node leaves or joins mostly its
// own partitions move.
func corpusOwners(parts int, live []string) []string {
	out := make([]string, parts)
	nodes := slices.Clone(live)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	if len(nodes) == 0 {
		return out
	}
	capacity := (parts + len(nodes) - 1) / len(nodes)
	load := make(map[string]int, len(nodes))
	for c := range out {
		best, bestRank := "", uint32(0)
		for _, n := range nodes {
			if load[n] >= capacity {
				continue
			}
			if r := corpusRank(n, c); best == "" || r > bestRank {
				best, bestRank = n, r
			}
		}
		out[c] = best
		load[best]++
	}
	return out
}

// corpusRank is node's rank for partition c.
func corpusRank(node string, c int) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	_, _ = h.Write([]byte{0, byte(c)})
	return h.Sum32()
}

// File is the ready local file of partition c (corpusLocal).
func (m *corpusFiles) File(c int) (corpusFile, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.files[c]
	if !ok || !h.ready.Load() {
		return corpusFile{}, false
	}
	return h.f, true
}

// Any is a ready local file (the lowest partition), else any open one
// (corpusLocal): every file knows every session's corpus.
func (m *corpusFiles) Any() (corpusFile, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var some *heldFile
	for _, h := range m.files {
		switch {
		case some == nil:
			some = h
		case h.ready.Load() != some.ready.Load():
			if h.ready.Load() {
				some = h
			}
		case h.c < some.c:
			some = h
		}
	}
	if some == nil {
		return corpusFile{}, false
	}
	return some.f, true
}

// Held lists the partitions this node has open and whether each answers.
func (m *corpusFiles) Held() map[int]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]bool, len(m.files))
	for c, h := range m.files {
		out[c] = h.ready.Load()
	}
	return out
}

// Run keeps the files in step with the owners until ctx ends, then closes
// them (keeping the owned ones on disk for the next start).
func (m *corpusFiles) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.files == nil {
		m.files = map[int]*heldFile{}
	}
	m.mu.Unlock()
	m.dropStrays()
	t := time.NewTicker(m.tick)
	defer t.Stop()
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			m.closeAll()
			return nil
		case <-t.C:
		}
	}
}

// dropStrays deletes partition files of another partition count, or left
// by an earlier run for partitions now owned by others (they are taken
// again from the log if this node owns them later).
func (m *corpusFiles) dropStrays() {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return
	}
	owners := corpusOwners(m.parts, m.live())
	for _, e := range entries {
		sm := corpusFileRE.FindStringSubmatch(e.Name())
		if sm == nil {
			continue
		}
		c, _ := strconv.Atoi(sm[1])
		if c < m.parts && owners[c] == m.self() {
			continue
		}
		path := filepath.Join(m.dir, e.Name())
		if err := os.Remove(path); err != nil {
			m.logger.Warn("split projection: cannot delete a partition file this node does not serve", "file", path, "err", err)
		}
	}
}

// reconcile opens the files of partitions newly owned and drops those
// owned by others past the grace period.
func (m *corpusFiles) reconcile(ctx context.Context) {
	owners := corpusOwners(m.parts, m.live())
	self := m.self()
	now := time.Now()
	for c, owner := range owners {
		m.mu.Lock()
		h, held := m.files[c]
		m.mu.Unlock()
		switch {
		case owner == self && !held:
			if err := m.open(ctx, c); err != nil {
				m.logger.Error("split projection: cannot open a partition file", "partition", c, "err", err)
			}
		case owner == self:
			h.lostAt = time.Time{}
		case held && h.lostAt.IsZero():
			h.lostAt = now
		case held && now.Sub(h.lostAt) >= m.grace && m.answers(owner, c):
			m.drop(h, true)
		}
	}
}

// corpusReadySubject is where node says it answers partition c.
func corpusReadySubject(c int, node string) string {
	return fmt.Sprintf("%scorpusready.%d.%s", internalPrefix, c, node)
}

// answers reports whether node answers partition c's reads now: a
// partition handed over is answered by its old owner until then, so the
// hand-over leaves no gap.
func (m *corpusFiles) answers(node string, c int) bool {
	if m.nc == nil {
		return true
	}
	_, err := m.nc.Request(corpusReadySubject(c, node), nil, 250*time.Millisecond)
	return err == nil
}

// open opens (or creates) partition c's file and starts its projector; a
// goroutine marks it ready and subscribes once it has caught up.
func (m *corpusFiles) open(ctx context.Context, c int) error {
	path := filepath.Join(m.dir, corpusFileName(c))
	s, err := projections.Open(path)
	if err != nil {
		return err
	}
	if m.room != nil {
		s.SetRoom(m.room)
	}
	err = s.SetLogPartitions(m.pcfg.Partitions)
	if err == nil {
		err = s.SetCorpusPartition(m.parts, c)
	}
	if err != nil {
		_ = s.Close()
		if errors.Is(err, projections.ErrCorpusPartition) || errors.Is(err, projections.ErrLogPartitions) {
			// Another layout's file: taken again from the log.
			if rmErr := os.Remove(path); rmErr == nil {
				return m.open(ctx, c)
			}
		}
		return err
	}
	p, err := projections.NewProjector(m.pcfg, m.js, s, m.codec, m.logger.With("corpus_partition", c))
	if err != nil {
		_ = s.Close()
		return err
	}
	fctx, cancel := context.WithCancel(ctx)
	h := &heldFile{c: c, f: corpusFile{s: s, p: p}, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.files[c] = h
	m.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := p.Run(fctx); err != nil && fctx.Err() == nil {
			m.logger.Error("split projection: projector stopped", "partition", c, "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		m.catchUp(fctx, h)
	}()
	go func() { wg.Wait(); close(h.done) }()
	return nil
}

// catchUp waits until h's projector applied the log as it ends now, then
// answers h's reads.
func (m *corpusFiles) catchUp(ctx context.Context, h *heldFile) {
	start := time.Now()
	for ctx.Err() == nil {
		lasts, err := h.f.p.LogLasts(ctx)
		if err == nil {
			err = h.f.p.WaitForAll(ctx, lasts)
		}
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			m.logger.Warn("split projection: catching up", "partition", h.c, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(m.tick):
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	sub, err := m.serve(h.c, h.f)
	if err != nil {
		m.logger.Error("split projection: cannot answer a partition's reads", "partition", h.c, "err", err)
		return
	}
	h.sub.Store(sub)
	if m.nc != nil {
		rs, err := m.nc.Subscribe(corpusReadySubject(h.c, m.self()), func(msg *nats.Msg) { _ = msg.Respond(nil) })
		if err != nil {
			m.logger.Warn("split projection: cannot say a partition is answered here", "partition", h.c, "err", err)
		} else {
			h.readySub.Store(rs)
		}
	}
	h.ready.Store(true)
	m.logger.Info("split projection: serving a partition", "partition", h.c, "caught_up_in", time.Since(start).Round(time.Millisecond))
}

// drop stops answering h, stops its projector, closes its file and, with
// remove, deletes it.
func (m *corpusFiles) drop(h *heldFile, remove bool) {
	m.mu.Lock()
	delete(m.files, h.c)
	m.mu.Unlock()
	h.ready.Store(false)
	if sub := h.readySub.Load(); sub != nil {
		_ = sub.Unsubscribe()
	}
	if sub := h.sub.Load(); sub != nil {
		_ = sub.Unsubscribe()
	}
	h.cancel()
	<-h.done
	path := h.f.s.Path()
	if err := h.f.s.Close(); err != nil {
		m.logger.Warn("split projection: close", "partition", h.c, "err", err)
	}
	if remove {
		if err := os.Remove(path); err != nil {
			m.logger.Warn("split projection: cannot delete a partition file", "file", path, "err", err)
		}
		m.logger.Info("split projection: partition handed over", "partition", h.c)
	}
}

func (m *corpusFiles) closeAll() {
	m.mu.Lock()
	hs := make([]*heldFile, 0, len(m.files))
	for _, h := range m.files {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	for _, h := range hs {
		m.drop(h, false)
	}
}

// census counts, per ready partition file, its sessions, messages and
// bytes in use.
func (m *corpusFiles) census() map[int][3]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int][3]int64{}
	for c, h := range m.files {
		if !h.ready.Load() {
			continue
		}
		sessions, messages, bytes, _ := h.f.s.Census()
		out[c] = [3]int64{int64(sessions), int64(messages), bytes}
	}
	return out
}

// startSplit makes the node's split projection: the manager of its corpus
// partition files (run once placement is ready) and the read router over
// them.
func (n *Node) startSplit(js jetstream.JetStream, codec *events.Codec, marks *partitionMarks) (*corpusReadModel, error) {
	if err := os.MkdirAll(n.cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data dir: %w", err)
	}
	pcfg := projections.DefaultConfig()
	pcfg.Stream = n.cfg.Stream
	pcfg.Partitions = max(n.cfg.LogPartitions, 1)
	if n.cfg.ProjectorBatch > 0 {
		pcfg.BatchEvents = n.cfg.ProjectorBatch
	}
	parts := n.cfg.ProjectionPartitions
	n.split = &corpusFiles{
		parts: parts, dir: n.cfg.DataDir, js: js, codec: codec, pcfg: pcfg,
		self: func() string { return n.placement.NodeID() }, // set before Run starts
		live: func() []string {
			if t := n.placement; t != nil {
				return t.LiveNodes()
			}
			return nil
		},
		serve: func(c int, f corpusFile) (*nats.Subscription, error) {
			return serveCorpus(n.bg, n.nc, c, f, n.logger)
		},
		logger: n.logger, room: n.projectionRoom(), nc: n.nc, tick: 250 * time.Millisecond, grace: time.Second,
	}
	rm := &corpusReadModel{parts: parts, local: n.split, nc: n.nc, timeout: api.DefaultConfig().ForwardTimeout, marks: marks, logger: n.logger}
	n.splitRM = rm
	n.registerProjectionGauges(rm.AppliedSeq, n.split.lag)
	n.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_projection_partitions_served",
		Help: "With split projections: the corpus partitions this node answers (caught up)."},
		func() float64 {
			served := 0
			for _, ready := range n.split.Held() {
				if ready {
					served++
				}
			}
			return float64(served)
		}))
	return rm, nil
}

// lag is the largest lag behind the log of the node's files (0 with none).
func (m *corpusFiles) lag(ctx context.Context) (uint64, error) {
	m.mu.Lock()
	hs := make([]*heldFile, 0, len(m.files))
	for _, h := range m.files {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	var most uint64
	for _, h := range hs {
		l, err := h.f.p.Lag(ctx)
		if err != nil {
			return 0, err
		}
		most = max(most, l)
	}
	return most, nil
}

// splitPart is /healthz's report of the split projection.
type splitPart struct {
	Partitions int   `json:"partitions"`
	Serving    []int `json:"serving"`
	CatchingUp []int `json:"catching_up,omitempty"`
}

func (m *corpusFiles) health() *splitPart {
	p := &splitPart{Partitions: m.parts, Serving: []int{}}
	for c, ready := range m.Held() {
		if ready {
			p.Serving = append(p.Serving, c)
		} else {
			p.CatchingUp = append(p.CatchingUp, c)
		}
	}
	slices.Sort(p.Serving)
	slices.Sort(p.CatchingUp)
	return p
}
