# paddock — the two commands a newcomer types are `make run` and `make test`.

GO       ?= go
BIN      := bin/paddock
DATA_DIR ?= ./data
# paddock up's ports under `make run` (the table in README.md), e.g. make run CLIENT_PORT=2281.
CLIENT_PORT  ?= 2181
CLIENT_ADDR  ?= 127.0.0.1:$(CLIENT_PORT)
ADMIN_ADDR   ?= 127.0.0.1:8081
CONSOLE_ADDR ?= 127.0.0.1:8080
METRICS_PORT ?= 8091
# QUICK=1 makes `make bench` compare the servers in a short pass.
QUICK    ?=
# The fuzz targets `make fuzz` runs, as package:Target, each for FUZZTIME.
FUZZTIME ?= 30s
# The rounds of the seeded property tests make fuzz runs (make test runs the counts
# their files state).
FORGE_SEEDS ?= 30000
FUZZ_TARGETS := \
	./server/wire:FuzzDecodeRequest \
	./server/wire:FuzzDecodeConnect \
	./server/wire:FuzzReadFrame \
	./server/store:FuzzSegment \
	./server/store:FuzzSnapshot \
	./server/datatree:FuzzLoader \
	./server:FuzzRequest \
	./server:FuzzRaftEntry \
	./server:FuzzNote \
	./server/quorum:FuzzPeerFrames \
	./server/quorum:FuzzCheckedRaft \
	./server/quorum:FuzzProves \
	./provenance:FuzzVerify \
	./worker:FuzzSupervisorSpec \
	./worker:FuzzParseStat \
	./worker:FuzzParseRunAs

.PHONY: run build test deps check vet fmt-check bench bench-micro bench-compare bench-ensemble bench-snapshot bench-memory fuzz lint clean

## run: build paddock and run the whole platform on the embedded default (paddock up:
## a standalone server with data under DATA_DIR, clients on CLIENT_ADDR, the admin
## HTTP server on ADMIN_ADDR, a master and two workers of the task-scheduling cluster
## with /metrics from METRICS_PORT on, a log collector of the platform's own log, the
## web console on CONSOLE_ADDR).
run: build
	./$(BIN) up --data-dir $(DATA_DIR) --client-addr $(CLIENT_ADDR) --admin-addr '$(ADMIN_ADDR)' \
		--console-addr $(CONSOLE_ADDR) --metrics-port $(METRICS_PORT)

build:
	$(GO) build -o $(BIN) ./cmd/paddock

## test: install what the tests need if missing, then vet, format check, build and
## every test with the race detector. The tests start their own servers (paddock
## in-process, Apache ZooKeeper and MariaDB from the Debian packages, headless Chromium)
## on free loopback ports; the browser tests' screenshots are kept in artifacts/screenshots.
test: deps check build
	PADDOCK_ARTIFACTS=$(CURDIR)/artifacts/screenshots $(GO) test -race -count=1 -timeout 25m ./...
	@echo "conformance self-check: two Apache ZooKeepers must compare equal under the suite's normalisation"
	CONFORMANCE_SUBJECT=zookeeper $(GO) test -count=1 -timeout 5m ./test/conformance/

deps:
	./test/deps.sh

check: vet fmt-check

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the Go micro-benchmarks, with allocations, then paddock and Apache ZooKeeper 3.8
## side by side (bench-compare), then a snapshot under a write load (bench-snapshot), then
## large trees' memory, restarts and collections (bench-memory).
bench: bench-micro bench-compare bench-snapshot bench-memory

bench-micro:
	$(GO) test -run '^$$' -bench . -skip '^Benchmark(SideBySide|Ensemble|SnapshotUnderLoad|Memory)$$' -benchmem ./...

## bench-compare: both servers as processes on this machine, the same client and settings,
## every workload alternately on each, then a 3-member ensemble of each (writes and reads,
## sessions spread over the members); prints the tables and writes bench/results.md. About
## 16 minutes; `make bench-compare QUICK=1` is a short pass that leaves results.md alone.
bench-compare: deps
	PADDOCK_BENCH_QUICK=$(QUICK) $(GO) test -run '^$$' -bench '^BenchmarkSideBySide$$' -benchtime 1x -timeout 60m ./bench/

## bench-ensemble: only the ensemble section of bench-compare (about 4 minutes; QUICK=1:
## half a minute); prints its table and writes a report to $TMPDIR, not results.md.
bench-ensemble: deps
	PADDOCK_BENCH_QUICK=$(QUICK) $(GO) test -run '^$$' -bench '^BenchmarkEnsemble$$' -benchtime 1x -timeout 30m ./bench/

## bench-snapshot: a 3-member paddock ensemble loaded with 1,000,000 znodes snapshots under a
## setData load: the leader's peak RSS during it against the tree's size (goal <= 1.3x) and
## the write p99 during the snapshots against outside them (goal <= 2x); writes its section
## of bench/results.md (about a minute and a half; QUICK=1: 100,000 znodes, half a minute,
## the section in $TMPDIR).
bench-snapshot:
	PADDOCK_BENCH_QUICK=$(QUICK) $(GO) test -run '^$$' -bench '^BenchmarkSnapshotUnderLoad$$' -benchtime 1x -timeout 30m ./bench/

## bench-memory: each server, one at a time, loaded with 1,000,000 znodes of 100 B (under one
## parent, and 1,000 to a parent) and 10,000,000 of 50 B: RSS, peak RSS, live heap and bytes per
## znode, load rate, snapshot files, restart after kill -9; ZooKeeper from -Xmx1000m up to the
## heap that holds the tree; then paddock's write p99.9 during collection cycles against outside
## them. Writes its section of bench/results.md (QUICK=1: a tenth of the znodes, the section in
## $TMPDIR).
bench-memory: deps
	PADDOCK_BENCH_QUICK=$(QUICK) $(GO) test -run '^$$' -bench '^BenchmarkMemory$$' -benchtime 1x -timeout 120m ./bench/

## fuzz: run each fuzz target for FUZZTIME (the seed corpora run in `make test`).
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done
	@echo "seeded: forged peer messages over $(FORGE_SEEDS) rounds, and snapshot mutations"
	$(GO) test -count=1 -run '^TestSimForgedMessages$$' ./server/quorum/ -args -forge.seeds=$(FORGE_SEEDS)
	$(GO) test -count=1 -run '^TestSnapshotCheckProvesRestore$$' ./server/ -args -snapcheck.seeds=$(FORGE_SEEDS)

lint:
	@command -v golangci-lint >/dev/null && golangci-lint run ./... || echo "golangci-lint not installed; skipped"

clean:
	rm -rf bin
