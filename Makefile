# concourse-tekton: Concourse pipelines, run natively on Kubernetes through Tekton.
#
# `make help` lists the targets. Every target runs from a fresh clone: the Go toolchain
# fetches what it needs through the module proxy.

GO       ?= go
PKGS     ?= ./...
BIN      ?= bin
BENCHTIME ?= 1x
BENCHCOUNT ?= 6
FUZZTIME ?= 30s

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

VERSION  ?= dev
# The project's images: REGISTRY/runner, REGISTRY/concourse-tekton and REGISTRY/web, tagged VERSION.
REGISTRY ?= ghcr.io/concourse-tekton
RUNNER_IMAGE ?= $(REGISTRY)/runner:$(VERSION)
CLI_IMAGE ?= $(REGISTRY)/concourse-tekton:$(VERSION)
WEB_IMAGE ?= $(REGISTRY)/web:$(VERSION)
# The platforms whose fly the web node's image offers for download (fly sync, the UI's links).
FLY_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
IMAGE_LABELS = -label org.opencontainers.image.version=$(VERSION) \
	-label org.opencontainers.image.source=https://github.com/concourse-tekton/concourse-tekton \
	$(if $(REVISION),-label org.opencontainers.image.revision=$(REVISION))
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w -X github.com/concourse-tekton/concourse-tekton/cmd/internal/cli.version=$(VERSION)

.PHONY: build
build: ## Build the binaries into ./bin.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

.PHONY: install
install: ## Install the concourse-tekton command into GOBIN (go install, with the version).
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/concourse-tekton

.PHONY: runner-image
runner-image: build ## Build the step runner's image as bin/images/runner.tar (RUNNER_IMAGE=ref; PUSH=1 pushes it).
	@mkdir -p $(BIN)/images
	$(BIN)/runner-image -binary $(BIN)/concourse-runner -ref $(RUNNER_IMAGE) $(IMAGE_LABELS) -o $(BIN)/images/runner.tar $(if $(PUSH),-push)

.PHONY: cli-image
cli-image: build ## Build the concourse-tekton command's image (gc's CronJob) as bin/images/cli.tar (CLI_IMAGE=ref; PUSH=1 pushes it).
	@mkdir -p $(BIN)/images
	$(BIN)/runner-image -cli $(BIN)/concourse-tekton -ref $(CLI_IMAGE) $(IMAGE_LABELS) -o $(BIN)/images/cli.tar $(if $(PUSH),-push)

.PHONY: web-image
web-image: build ## Build the web node's image (Concourse's web node, its UI, the build engine, fly for FLY_PLATFORMS) as bin/images/web.tar (WEB_IMAGE=ref; PUSH=1 pushes it).
	@mkdir -p $(BIN)/images
	web=$$(CONCOURSE_TEKTON_FLY_PLATFORMS="$(FLY_PLATFORMS)" GO=$(GO) atc/build.sh) && \
		$(BIN)/runner-image -web $$web/concourse-tekton-web -fly-dir $$web/fly-assets -ref $(WEB_IMAGE) $(IMAGE_LABELS) \
			-o $(BIN)/images/web.tar $(if $(PUSH),-push)

.PHONY: images
images: runner-image cli-image web-image ## Build the project's three images into bin/images/ (REGISTRY=host/path names them, VERSION tags them; PUSH=1 pushes them there).

.PHONY: test
test: ## Run the hermetic tests (unit, golden, corpus, the Helm chart with the real helm) and print the corpus tables.
	$(GO) vet $(PKGS)
	@mkdir -p $(BIN) && rm -f $(BIN)/corpus-report.txt
	HELM=$$(deploy/helm/helm.sh) && export HELM && \
		CONCOURSE_TEKTON_CORPUS_REPORT=$(abspath $(BIN))/corpus-report.txt $(GO) test -count=1 $(PKGS)
	@sort $(BIN)/corpus-report.txt 2>/dev/null || true

.PHONY: test-race
test-race: ## The hermetic tests under the race detector (-short: no corpus sweeps), this module's and the atc module's.
	HELM=$$(deploy/helm/helm.sh) $(GO) test -race -short -count=1 $(PKGS)
	$(MAKE) -C atc test-race

.PHONY: bench
bench: ## Run the benchmarks, several times, and summarise them with benchstat.
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) $(PKGS) | tee $(BIN)/bench.txt
	$(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da $(BIN)/bench.txt

.PHONY: bench-check
bench-check: ## Run every hermetic benchmark once, as CI does, so that none breaks unseen (half a minute).
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 $(PKGS)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s).
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg; \
	  done; \
	done

.PHONY: lint
lint: ## Check formatting and run go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: fmt
fmt: ## Format the Go sources.
	gofmt -w $$(git ls-files '*.go')

.PHONY: update-golden
update-golden: ## Rewrite the golden files (and examples/booklit/tekton) from the current output.
	$(GO) test ./concourse/planner/ ./translate/ ./cmd/internal/cli/ -update
	HELM=$$(deploy/helm/helm.sh) $(GO) test ./deploy/helm/ -update

E2E_CLUSTER ?= e2e/cluster/cluster.sh

.PHONY: e2e
e2e: runner-image cli-image web-image ## End-to-end tests on a real local cluster (root): up if needed, test, down, check the host is clean. E2E_KUBECONFIG=path uses another cluster.
	GO=$(GO) $(E2E_CLUSTER) test

# The web node's image the e2e suite installs with the chart needs fly for this machine alone.
e2e: FLY_PLATFORMS = linux/amd64

.PHONY: bench-e2e
bench-e2e: ## Benchmarks on the running e2e cluster (make e2e-up first): a build against a hand-written Tekton PipelineRun of the same steps; sequences against one hand-written pod; execute's transfers against tar | kubectl exec.
	cd e2e && $(GO) test -tags e2e -count=1 -run '^$$' -bench . -benchtime 1x -count 3 -timeout 30m .

.PHONY: bench-scale
bench-scale: ## Scale on the running e2e cluster (make e2e-up first) with simulated nodes (kwok, built into the cache): 1,000 builds followed by one process, gc of 10,000 (SCALE_BUILDS, SCALE_GC_BUILDS, SCALE_NODES).
	eval "$$($(E2E_CLUSTER) kwok)" && export KWOK_BIN KWOK_STAGES && export E2E_KUBECONFIG=$${E2E_KUBECONFIG:-$$($(E2E_CLUSTER) kubeconfig)} && \
		cd e2e && $(GO) test -tags e2e -count=1 -run '^$$' -bench Scale -benchtime 1x -timeout 90m ./scale

.PHONY: bench-checks-kwok
bench-checks-kwok: ## Periodic checks' load on the control plane of the running e2e cluster (make e2e-up first) with simulated nodes (kwok): 5,000 resources checked every minute for 5 minutes, as runs of their own, then in check containers (CHECKS_KWOK_RESOURCES, CHECKS_KWOK_EVERY, CHECKS_KWOK_DURATION, CHECKS_KWOK_MODES, CHECKS_KWOK_QPS, CHECKS_KWOK_OUT).
	eval "$$($(E2E_CLUSTER) kwok)" && export KWOK_BIN KWOK_STAGES && export E2E_KUBECONFIG=$${E2E_KUBECONFIG:-$$($(E2E_CLUSTER) kubeconfig)} && \
		cd e2e && $(GO) test -tags e2e -count=1 -run '^$$' -bench Checks -benchtime 1x -timeout 90m ./scale

.PHONY: e2e-up
e2e-up: runner-image cli-image ## Start the local e2e cluster (root; ~10 GB disk, 10-20 min the first time) and print its kubeconfig path.
	$(E2E_CLUSTER) up

.PHONY: e2e-down
e2e-down: ## Stop the local e2e cluster and restore the machine.
	$(E2E_CLUSTER) down

.PHONY: e2e-teardown-check
e2e-teardown-check: ## Fail unless the machine is as it was before the last e2e-up (processes, mounts, links, routes, sysctls).
	$(E2E_CLUSTER) check-clean

# The ATC: Concourse's own web node (atc/, a module of its own; see atc/README.md).
ATC_NAMESPACE ?= atc

.PHONY: atc-up
atc-up: ## Build (cached) and start Concourse's web node with Postgres on 127.0.0.1, its builds in namespace ATC_NAMESPACE (atc) of the local cluster (make e2e-up first; or CONCOURSE_TEKTON_KUBECONFIG=... for another), and log fly in.
	@if [ -z "$${CONCOURSE_TEKTON_KUBECONFIG:-}" ]; then \
	  $(E2E_CLUSTER) status || { echo "the local cluster is not up: make e2e-up first (or set CONCOURSE_TEKTON_KUBECONFIG and CONCOURSE_TEKTON_NAMESPACE)" >&2; exit 1; }; \
	  $(E2E_CLUSTER) kubectl get namespace $(ATC_NAMESPACE) >/dev/null 2>&1 || $(E2E_CLUSTER) kubectl create namespace $(ATC_NAMESPACE) >/dev/null; \
	  export CONCOURSE_TEKTON_KUBECONFIG=$$($(E2E_CLUSTER) kubeconfig) CONCOURSE_TEKTON_NAMESPACE=$(ATC_NAMESPACE) \
	    CONCOURSE_TEKTON_RESOURCE_IMAGE=mock=e2e.invalid/mock-resource:v1,git=e2e.invalid/git-resource:v1 \
	    CONCOURSE_TEKTON_IMAGE_REGISTRY=$$($(E2E_CLUSTER) registry); \
	fi; $(MAKE) -C atc up

.PHONY: atc-down
atc-down: ## Stop the web node and Postgres started by atc-up.
	$(MAKE) -C atc down

.PHONY: atc-test
atc-test: ## Vet and test the atc module against the pinned, patched Concourse (builds it once into the cache).
	$(MAKE) -C atc test

.PHONY: atc-e2e
atc-e2e: ## End to end under the ATC: the real fly against the web node whose builds run on the e2e cluster (make e2e-up first).
	$(MAKE) -C atc e2e

.PHONY: testflight
testflight: ## Concourse's own acceptance suite (testflight), every file, against the ATC on the e2e cluster (make e2e-up first; TESTFLIGHT_FOCUS="fail do ..." for some files).
	$(MAKE) -C atc testflight

.PHONY: faults
faults: ## The fault matrix through the web node on the e2e cluster (make e2e-up first; root): the API server, kubelet, containerd, Postgres and web node restarted or killed mid-build, a step's pod deleted or evicted (docs/faults.md).
	E2E_KUBECONFIG=$${E2E_KUBECONFIG:-$$($(E2E_CLUSTER) kubeconfig)} E2E_IMAGE_REGISTRY=$${E2E_IMAGE_REGISTRY:-$$($(E2E_CLUSTER) registry)} $(MAKE) -C atc faults

.PHONY: bench-checks
bench-checks: ## What periodic checks cost through the web node on the e2e cluster (make e2e-up first; root): pods and TaskRuns a minute, check lag, the API server's and kubelet's CPU, for CHECKS_RESOURCES resources (docs/benchmarks.md).
	E2E_KUBECONFIG=$${E2E_KUBECONFIG:-$$($(E2E_CLUSTER) kubeconfig)} E2E_IMAGE_REGISTRY=$${E2E_IMAGE_REGISTRY:-$$($(E2E_CLUSTER) registry)} $(MAKE) -C atc bench-checks

.PHONY: soak
soak: ## The soak through the web node on the e2e cluster (make e2e-up first; root): 500 builds over an hour, faults of the matrix injected at random (SOAK_BUILDS, SOAK_DURATION, SOAK_FAULT_EVERY; docs/faults.md).
	E2E_KUBECONFIG=$${E2E_KUBECONFIG:-$$($(E2E_CLUSTER) kubeconfig)} E2E_IMAGE_REGISTRY=$${E2E_IMAGE_REGISTRY:-$$($(E2E_CLUSTER) registry)} $(MAKE) -C atc soak

.PHONY: testflight-ci
testflight-ci: ## The CI subset of testflight (a few minutes; make e2e-up first).
	$(MAKE) -C atc testflight-ci
