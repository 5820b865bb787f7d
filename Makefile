# agentmem build targets. `make test` is the command CI runs (see README).
GO      ?= go
PKGS    ?= ./...
PROTOS  := $(wildcard proto/memory/v1/*.proto)

.PHONY: build run test deps ci verify proto bench bench-memory fuzz crash crash-erase faults-partitions faults-split screenshots soak

# build compiles every package and writes the binaries to bin/ (ignored by
# git): bin/agentmem-node, bin/agentmem-replay, bin/agentmem-membench,
# bin/agentmem-mcp.
BIN     ?= bin
build:
	$(GO) build ./...
	$(GO) build -o $(BIN)/agentmem-node ./cmd/node
	$(GO) build -o $(BIN)/agentmem-replay ./cmd/replay
	$(GO) build -o $(BIN)/agentmem-membench ./cmd/membench
	$(GO) build -o $(BIN)/agentmem-mcp ./cmd/mcp

run:
	$(GO) run ./cmd/node

# test is the suite CI runs (after deps and verify: see ci). -timeout 30m:
# the node package runs close to go test's default 10 minutes under -race
# on 2 cores.
# Tests that need
# node, python3 or the npm packages skip without them locally (CI fails
# instead); .ci/prereqs says which, before and after the run.
# The race detector's reports go to files and are printed again at the
# end: a CI log that shows only its tail still shows the whole report.
test:
	@sh .ci/prereqs
	@rl=$$(mktemp -d); GORACE="log_path=$$rl/race" $(GO) test -race -count=1 -timeout 30m $(PKGS); rc=$$?; \
	sh .ci/prereqs; for f in $$rl/race.*; do [ -e "$$f" ] && { echo "--- race report $$f"; cat "$$f"; }; done; rm -rf "$$rl"; exit $$rc

# deps installs what the JavaScript tests need, from the committed lockfiles.
deps:
	cd conformance/mcp && npm ci --no-audit --no-fund
	cd conformance/json && npm ci --no-audit --no-fund
	cd conformance/openapi && npm ci --no-audit --no-fund
	cd conformance/axe && npm ci --no-audit --no-fund
	cd sdk/ts && npm ci --no-audit --no-fund

# ci is what .ci/run does once the tools are installed: deps, verify, test
# with CI=true (a missing runtime fails instead of skipping).
ci: deps verify
	CI=true $(MAKE) test

# proto regenerates the committed Go code from proto/ with protoc (Debian's
# protobuf-compiler) and protoc-gen-go pinned as a go tool in go.mod.
proto:
	protoc -I proto --plugin=protoc-gen-go=$$($(GO) tool -n protoc-gen-go) \
		--go_out=. --go_opt=module=github.com/agentmem/agentmem $(PROTOS)

verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	cp go.mod /tmp/agentmem.go.mod.bak; cp go.sum /tmp/agentmem.go.sum.bak
	$(GO) mod tidy
	@git diff --exit-code go.mod go.sum || (echo "go mod tidy changed go.mod/go.sum"; exit 1)
	$(MAKE) proto
	@git diff --exit-code -- proto/ || (echo "regenerated proto differs from the committed code"; exit 1)

# bench runs every benchmark; each figure is printed beside the raw engine
# figure measured in the same run (plain JetStream publish, ordered-consumer
# read, KV, object store). Embedded server, file storage, sync default.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=2s ./events/ ./internal/segmented/ ./internal/swap/ ./internal/sharedmem/ ./tenancy/ ./api/
	$(GO) test -run '^$$' -bench ColdActivation -benchmem -benchtime=2s ./actors/
	$(GO) test -run '^$$' -bench ScopeValue100KB -benchtime=2s ./actors/
	$(GO) test -run '^$$' -bench IdleSessionMemory -benchtime=1x ./actors/
	$(GO) test -run '^$$' -bench Shutdown -benchtime=3x ./node/
	$(GO) test -run '^$$' -bench 'Rebuild|RawOrdered|BoltSortedPut' -benchtime=2x ./projections/
	$(GO) test -run '^$$' -bench 'Search|Recall' ./projections/
	$(GO) test -run '^$$' -bench . -benchtime=20x ./largedata/
	$(GO) test -run '^$$' -bench Cluster -benchtime=3000x ./node/
	$(GO) test -run '^$$' -bench Failover -benchtime=20x ./node/
	$(GO) test -run '^$$' -bench 'PageLoad|LiveEvent|TimelineBrowser' -benchtime=20x ./inspector/

# screenshots retakes the inspector's pictures in docs/img (README) with
# headless Chromium against a node with a few sessions.
screenshots:
	$(GO) test -count=1 -run '^TestScreenshots$$' ./inspector/ -screenshots=$(CURDIR)/docs/img

# bench-memory prints the memory-quality tables (membench, DESIGN §5c): fact
# extraction into long-term memory (consolidation, -mode extraction), the
# question mode on LoCoMo-like conversations (agentmem beside a window, two
# window + FTS5 RAGs and the full transcript; -mode question alone), then
# answers in the context beside a sliding window of the same budget, search
# recall beside SQLite FTS5, the summarizer alone, in-process latency. Same
# seed, same figures (except the latencies). The held-out conversations
# (membench/heldout, then the second and third sets in membench/heldout/fresh
# and membench/heldout/third) come
# first: extraction, the cross-session mode (each sitting a session of one
# user on a real node, each question in a new session) and the question
# mode; LOCOMO=dir adds the public conversations
# of that directory (LoCoMo files, never in the repository) next: the
# cross-session and question modes; the generator's tables last.
# Flags: make bench-memory MEMBENCH_FLAGS='-seed 7 -budgets 1024,8192'.
bench-memory:
	$(GO) run ./cmd/membench $(if $(LOCOMO),-locomo $(LOCOMO)) $(MEMBENCH_FLAGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./events/
	$(GO) test -run '^$$' -fuzz FuzzQueryTerms -fuzztime 30s ./internal/swap/
	$(GO) test -run '^$$' -fuzz '^FuzzAnalyze$$' -fuzztime 30s ./internal/swap/
	$(GO) test -run '^$$' -fuzz FuzzDecodeValue -fuzztime 30s ./internal/sharedmem/
	$(GO) test -run '^$$' -fuzz FuzzIdentify -fuzztime 30s ./tenancy/
	$(GO) test -run '^$$' -fuzz FuzzSummarize -fuzztime 30s ./internal/segmented/
	$(GO) test -run '^$$' -fuzz '^FuzzCount$$' -fuzztime 30s ./internal/segmented/
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime 30s ./internal/jsonbody/
	$(GO) test -run '^$$' -fuzz FuzzHighlight -fuzztime 30s ./inspector/
	$(GO) test -run '^$$' -fuzz FuzzParseItem -fuzztime 30s ./erasure/

# crash runs the kill -9 test under a longer load.
crash:
	$(GO) test -count=1 -run TestCrashNoAcknowledgedWriteLost -v ./cmd/node/ -crash.load=10s

# crash-erase kills a node of a 3-node R3 cluster (kill -9) at every step
# of a user erase, and ten times at a random moment; `make test` runs
# three of the steps.
crash-erase:
	$(GO) test -race -count=1 -run '^TestEraseUserKilledAtEachStep$$' -v ./node/ -erase.crash.all

# faults-partitions runs the cluster fault tests (rolling restart, kill -9,
# quorum loss on a 3-server R3 cluster) with the log in one stream and in six
# partitions (make test runs them with one), the loss of some of six
# partitions' quorums on a 5-server cluster (TestQuorumLoss/K6partial), and
# the loss of the placement bucket's quorum, the log's kept, on a 5-server
# cluster with three nodes (TestQuorumLoss/K1placement).
faults-partitions:
	$(GO) test -race -count=1 -timeout 30m -run '^(TestRollingHandover|TestKillFailover|TestQuorumLoss)$$' -v ./node/ -faults.partitions

# faults-split runs the same fault tests' K6 runs with split projections
# (--projection-partitions 6: each node indexes only its corpus partitions).
faults-split:
	$(GO) test -race -count=1 -timeout 30m -run '^(TestRollingHandover|TestKillFailover|TestQuorumLoss)$$/^K6$$' -v ./node/ -faults.partitions -faults.split

# soak runs a default node under a steady mixed load for SOAK (default 30m;
# `make soak SOAK=5m`, or SOAK=5m in the environment): appends, searches,
# context and recall reads, watch polls and Server-Sent Events streams,
# inspector timeline and context pages, an erase every minute. Every 10 s it
# samples /healthz, the log stream's consumers, goroutines, live actors and
# the live heap, and prints a table at the end, then the quiet live heap
# (clients paused, after two collections) after the warm-up, in the middle,
# at the last sample and at the end. It fails if /healthz ever answers
# other than 200, an operation fails other than with the 404 of something
# erased, consumers or goroutines grow, or the quiet heap later exceeds
# 1.25 × the warm-up's + 8 MB. Not part of `make test`. More knobs:
# SOAK_FLAGS='-soak.workers 2 -soak.pause 50ms -soak.erase 30s -soak.sample 5s
# -soak.heapgrowth 1.25 -soak.heapslack 8 -soak.heapprofile /tmp/soak.heap'
# (heap profiles at the first minute, warm-up, middle, last and end: go tool pprof
# -top -base /tmp/soak.heap.warm-up /tmp/soak.heap.end).
SOAK ?= 30m
soak:
	$(GO) test -count=1 -run '^TestSoak$$' -v -timeout 0 ./node/ -soak=$(SOAK) $(SOAK_FLAGS)
