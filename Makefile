# lbchaos — see README.md.
GO      ?= go
BIN     := bin/lbchaos
NAME    ?=
ARGS    ?=
PKGS    := ./...

.PHONY: all build sim-vs-real image example-image experiment list test vet fmt-check fuzz bench bench-strategies bench-harness bench-calls bench-proxy bench-sidecar bench-docker bench-peer deps clean clean-results kube-up kube-down kube-load kube-image kube-status

all: build

# The revision lbchaos --version prints, for builds whose Go build info has
# none (-buildvcs=false, or a git worktree, which the go command does not
# recognise).
VCS_LDFLAGS := $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format='-X main.vcsRevision=%H -X main.vcsTime=%cd' 2>/dev/null) \
	$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),-X main.vcsModified=true)

# Static, so the same binary serves as the backend containers' entry point.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(VCS_LDFLAGS)" -o $(BIN) ./cmd/lbchaos

# The backend image (FROM scratch + this binary), tagged by content hash.
image: build
	./$(BIN) image

# The example service (experiments/exampleservice) as an image of its own,
# lbchaos-example:<hash>, for instances.app.
example-image: build
	CGO_ENABLED=0 $(GO) build -o bin/exampleservice ./experiments/exampleservice
	@ref=$$(./$(BIN) image --binary bin/exampleservice --repo lbchaos-example) && \
		docker tag "$$ref" lbchaos-example:latest && echo "$$ref, tagged lbchaos-example:latest"

list: build
	@./$(BIN) list

# make experiment NAME=fast-fail [ENGINE=sim] [ARGS="--duration 10s --rate 2000"]
# ENGINE=sim needs neither Docker nor the proxies, so it installs nothing.
experiment: build
	@if [ -z "$(NAME)" ]; then echo "usage: make experiment NAME=<experiment> [ENGINE=real|sim] [ARGS=...]; experiments:"; ./$(BIN) list; exit 2; fi
	$(if $(filter sim,$(ENGINE)),,@$(MAKE) --no-print-directory deps)
	$(if $(filter app-%,$(NAME)),$(if $(filter sim,$(ENGINE)),,$(MAKE) example-image))
	./$(BIN) run $(NAME) $(if $(ENGINE),--engine $(ENGINE)) $(ARGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Every test, with the race detector. One package at a time (-p 1): the
# tests that put real load on real backends (harness, harness/live, the
# engines' parity test, cmd) measure latency and share the machine's cores
# with the generator and the backends; another package's tests beside them
# would measure the machine instead.
# -timeout 30m: cmd/lbchaos's tests run real experiments end to end
# (about 9 minutes under -race on 2 cores), near go test's default of 10.
test: fmt-check vet
	$(GO) test -race -count=1 -p 1 -timeout 30m $(PKGS)

# The fuzz targets, one after another, each for FUZZEXECS executions (go
# test -fuzz takes one target per run). A bound by executions, not by time:
# a time budget can fail at random with "context deadline exceeded" and no
# crasher when the fuzzer stalls (golang/go#75804). One worker each
# (-parallel 1): the machine's cores are shared. Their seed corpora (f.Add
# and testdata/fuzz/) run under make test as ordinary tests. A failing input
# is written to the package's testdata/fuzz/<target>/; commit it with the fix.
# make fuzz [FUZZEXECS=200000] [FUZZ=FuzzDist]
FUZZEXECS ?= 20000
FUZZ     ?=
FUZZ_TARGETS := \
	./strategies/:FuzzParse \
	./strategies/proxyspec/:FuzzParse \
	./experiments/:FuzzParse \
	./experiments/:FuzzTargets \
	./faultyserver/:FuzzControlFault \
	./faultyserver/:FuzzDist \
	./reports/:FuzzReadJSON \
	./harness/proxies/:FuzzAccessLog \
	./harness/proxies/:FuzzConnLine
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		if [ -n "$(FUZZ)" ] && [ "$(FUZZ)" != "$$name" ]; then continue; fi; \
		echo "fuzz: $$name in $$pkg, $(FUZZEXECS) executions"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZEXECS)x -parallel 1 $$pkg; \
	done

# Go benchmarks: each strategy's pick+done cost, the backend's handler cost,
# the harness's own latency overhead on the baseline load (in-process and
# Docker), and the simulator's speed and memory.
bench: bench-strategies bench-harness bench-calls

bench-strategies:
	$(GO) test -run '^$$' -bench . -benchmem ./strategies/ ./faultyserver/

# The same backends behind lbchaos proxy, nginx and HAProxy: added p50 and
# p99 at 4000 req/s, and the highest rate each holds at 99% success; then
# the latency each adds to one request at a time (no queue).
bench-proxy: build
	LBCHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'ProxyOverhead' -benchtime 1x -timeout 30m ./harness/live/
	LBCHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'ProxyHop' -benchtime 3000x -count 3 ./harness/proxies/

# The fault sidecar's added latency at the baseline load: in this process
# against a bare relay and nginx (bench-harness runs that part too), then as
# a process per instance, as deployed, against one nginx per instance.
bench-sidecar: build
	LBCHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkSidecar(AtBaseline|Processes)$$' -benchtime 1x -timeout 30m ./harness/live/

# lbchaos against its peer, plain Vegeta attacking plain net/http servers,
# in one process on the same load: CPU per request, p50/p99 and their
# ratios (baseline, medians of alternating rounds), and the sustained rate
# at 1 ms service (10k, 15k, 20k req/s).
bench-peer:
	$(GO) test -run '^$$' -bench '^BenchmarkPeer$$' -benchtime 1x -timeout 20m ./harness/live/

# The real proxies some strategies run (nginx:..., haproxy:..., caddy:...,
# and nginx's stream module for nginx:...+stream), from Debian's packages.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@for p in nginx haproxy caddy stream; do \
		if [ $$p = stream ]; then [ -f /usr/lib/nginx/modules/ngx_stream_module.so ] && continue; \
		elif command -v $$p >/dev/null || [ -x /usr/sbin/$$p ]; then continue; fi; \
		if ! command -v apt-get >/dev/null; then echo "deps: $$p is missing and there is no apt-get; install nginx (with its stream module), haproxy and caddy with your package manager"; exit 1; fi; \
		pkg=$$p; [ $$p = nginx ] && pkg=nginx-light; [ $$p = stream ] && pkg=libnginx-mod-stream; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg || exit 1; \
	done

# One exchange at a time through the engine's client to a backend that
# answers at once: HTTP/1.1 against gRPC (built-in and grpc-go balancers).
bench-calls:
	$(GO) test -run '^$$' -bench '^BenchmarkCallCost' -benchtime 2000x -count 3 ./harness/live/

# Real load (overhead, in-process and Docker) and the simulator (speed, memory).
bench-harness:
	$(GO) test -run '^$$' -bench '^Benchmark(Overhead|Sim|SidecarAtBaseline|Sweep)' -benchtime 1x -timeout 20m ./harness/live/ ./harness/sim/ ./harness/sweep/

# CPU per request with the backends in containers (host network) against
# in-process, and its ratio (cpu-ratio), in one run; bench-harness runs it too.
bench-docker: build
	LBCHAOS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkOverheadDockerCPU$$' -benchtime 1x -timeout 20m ./harness/live/

# The simulator against real runs, calibrated and not (lbchaos simcheck), on
# the scenarios of SCENARIOS (default: fast-fail slow-instance crash freeze
# noisy-neighbor; Docker for the last three), one real run at a time
# (LOCK=FILE: each under flock FILE). RUN_ARGS adds flags to every real run.
SIM_VS_REAL_OUT ?= results/sim-vs-real
sim-vs-real: build
	.github/scripts/sim-vs-real.sh $(SIM_VS_REAL_OUT) $(SCENARIOS)

# A real single-node Kubernetes on this machine (root; Docker for images).
# kube-up builds the components once per KUBE_VERSION into
# ${XDG_CACHE_HOME:-~/.cache}/lbchaos/kube/, records the host state, starts
# the cluster and prints KUBECONFIG=<path> as its last line. kube-down stops
# it, restores the host and checks it against the record (non-zero when it
# differs). IMAGES="ref ..." imports local Docker images (kube-up, kube-load).
KUBE_VERSION ?= v1.34.4
# kube-proxy's mode: iptables (its default) or nftables; no IPVS here.
KUBE_PROXY_MODE ?= iptables
IMAGES       ?=
KUBE         := CGO_ENABLED=0 $(GO) run ./harness/kube/localcluster/cmd/localcluster
kube-up:
	@$(KUBE) up --version $(KUBE_VERSION) --proxy-mode $(KUBE_PROXY_MODE) --go $(GO) $(if $(IMAGES),--image "$(IMAGES)")

kube-down:
	@$(KUBE) down --version $(KUBE_VERSION)

kube-load:
	@$(KUBE) load --version $(KUBE_VERSION) --image "$(IMAGES)"

# The backend image of this tree, imported into the local cluster, for
# lbchaos run ... --backends kube (which --kube-load does too).
kube-image: build
	@ref=$$(./$(BIN) image) && $(KUBE) load --version $(KUBE_VERSION) --image "$$ref" && echo "$$ref"

kube-status:
	@$(KUBE) status --version $(KUBE_VERSION)

# Removes lbchaos's containers and networks (if Docker runs), its namespaces
# (if a Kubernetes cluster answers: KUBECONFIG), bin/ and results/.
# Removes lbchaos's containers, networks and namespaces and the built
# binaries; results stay (make clean-results removes them).
clean:
	@if [ -x $(BIN) ]; then ./$(BIN) clean; else CGO_ENABLED=0 $(GO) run ./cmd/lbchaos clean; fi
	rm -rf bin

clean-results:
	rm -rf results
