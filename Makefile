# sandfs: `make help` lists the targets.
GO      ?= go
BIN     := bin/sandfs
LISTEN  ?= 127.0.0.1:7420
ROOT    ?= ./sandbox
ARGS    ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/sandfs
	$(GO) build -o $(BIN) ./cmd/sandfs

.PHONY: image
image: ## build the static binary and its container image, bin/sandfs-image.tar (docker-archive; no base image, no registry; deploy/image)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/sandfs
	cd deploy && $(GO) run ./image -bin ../$(BIN) -out ../bin/sandfs-image.tar $(if $(TAG),-tag $(TAG),)

.PHONY: run
run: build ## serve ./sandbox on 127.0.0.1:7420 with the token of ~/.local/state/sandfs (made at the first run; the log has the console URL; ROOT=, LISTEN=, ARGS= to change)
	$(BIN) serve --root $(ROOT) --listen $(LISTEN) $(ARGS)

# The project's packages: ./... less the default sandbox of make run
# (./sandbox, inside the module), whose files are a user's, never ours to
# vet or test.
PKGS = $(shell $(GO) list -e ./... | grep -v '^sandfs/sandbox\(/\|$$\)')

.PHONY: test
test: vet layering ## vet, layering check, then every test with -race (fuzz corpora included), then the deploy module's (manifests, image tool)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...

.PHONY: vet
vet: ## go vet and gofmt check
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './sandbox/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: layering
layering: ## fail if core imports rest/fusefs/cmd, or rest and fusefs import each other
	@./.ci/layering

.PHONY: conformance
conformance: build ## pjdfstest as root (umask 022) on a fresh root dir, then inside a fresh mount of one; fails on a test the mount fails and the root passes (about 3.5 min; CONFORMANCE_ARGS= for the driver's flags)
	$(GO) run ./integration/conformance -bin $(BIN) $(CONFORMANCE_ARGS)

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 60s)
	@set -e; for t in core:FuzzResolve core/tar:FuzzExtractTar core/linediff:FuzzOps core/linediff:FuzzOpsGNU rest:FuzzRange rest:FuzzSandboxdPath rest:FuzzDecoders rest/aio:FuzzAIODecoders rest/aio:FuzzEditor; do \
	  echo "== $${t#*:} ($${t%%:*})"; $(GO) test ./$${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $${FUZZTIME:-60s} -fuzzminimizetime 10s; done

.PHONY: soak
soak: ## the long reliability runs: TestLoad for SOAK (default 10m) and the 10,000-iteration escape race (RELIABILITY.md)
	SOAK=$${SOAK:-10m} ESCAPE_ITERATIONS=$${ESCAPE_ITERATIONS:-10000} $(GO) test -race -count=1 -timeout 2h -v -run '^(TestLoad|TestEscapeRaceDaemon)$$' ./integration/

.PHONY: bench
bench: build ## every figure against its anchor (QUICK=1: about two minutes; ONLY=regexp of groups); writes bench/results.md
	$(GO) run ./bench/run -bin $(BIN) $(if $(QUICK),-quick,) $(if $(ONLY),-only '$(ONLY)',)

.PHONY: clean
clean: ## remove build output
	rm -rf bin
