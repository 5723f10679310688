# lbchaos — see README.md.
GO      ?= go
BIN     := bin/lbchaos
NAME    ?=
ARGS    ?=
PKGS    := ./...

.PHONY: all build experiment list test vet fmt-check bench bench-strategies bench-harness clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/lbchaos

list: build
	@./$(BIN) list

# make experiment NAME=fast-fail [ARGS="--duration 10s --rate 2000"]
experiment: build
	@if [ -z "$(NAME)" ]; then echo "usage: make experiment NAME=<experiment> [ARGS=...]; experiments:"; ./$(BIN) list; exit 2; fi
	./$(BIN) run $(NAME) $(ARGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Every test, with the race detector.
test: fmt-check vet
	$(GO) test -race -count=1 $(PKGS)

# Go benchmarks: each strategy's pick+done cost, the backend's handler cost,
# and the harness's own latency overhead on the baseline load.
bench: bench-strategies bench-harness

bench-strategies:
	$(GO) test -run '^$$' -bench . -benchmem ./strategies/ ./faultyserver/

bench-harness:
	$(GO) test -run '^$$' -bench Overhead -benchtime 1x -timeout 20m ./harness/

clean:
	rm -rf bin results
