# Switchback: `make run` starts the whole pipeline in one process on
# embedded defaults; `make test` runs every test that this machine can run.
GO        ?= go
BIN       := bin/switchback
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
TEST_TIMEOUT ?= 14m

export SWITCHBACK_DATA_DIR ?= ./var

.PHONY: all build run observe test test-short lint staticcheck deploy-check bench deps fmt vet clean e2e fuzz reliability soak openapi-lint

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/switchback

# The demo: embedded broker, Redis (redis-server if installed, else
# miniredis), ClickHouse (clickhouse-server if installed, else parked). The
# demo data turns on the outbound allow settings it needs (its sink and
# simulators are on http://127.0.0.1) unless they are given; the banner
# says so.
# The first build downloads the modules and compiles everything (a minute
# or two on a fresh machine): say so rather than sit silent.
run:
	@echo "make run: building $(BIN) (go build ./cmd/switchback; the first build downloads modules and compiles for a minute or two, later ones take seconds)..."
	@start=$$(date +%s); $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/switchback && \
	  echo "make run: built $(BIN) in $$(( $$(date +%s) - start )) s; starting '$(BIN) run' in demo mode (SWITCHBACK_DEMO=true; Ctrl-C stops it)"
	SWITCHBACK_DEMO=$${SWITCHBACK_DEMO:-true} ./$(BIN) run

# Prometheus for `make run` (run it in a second terminal): scrapes the ops
# listener with deploy/prometheus/run.yml, evaluates the alerts, prints
# links to the key queries (docs/runbook.md, "Local observability").
# Grafana is not offered: neither Debian nor npm packages a Grafana server.
observe:
	bash scripts/observe.sh

# Unit, component and integration tests. Integration tests start real
# redis-server / clickhouse-server when installed and skip otherwise, unless
# SWITCHBACK_REQUIRE_INTEGRATION=1 (CI), where a skip fails.
test:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

# The end-to-end suite alone: the built binary driven over HTTP with the
# simulators and a webhook sink (also part of `make test`).
# Every exchange with the API and every webhook is validated against the
# OpenAPI documents (internal/contract); the counts are printed after.
e2e:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestE2E|TestBinary|TestTiersApart' ./cmd/switchback/
	@cat "$${SWITCHBACK_TEST_OUTDIR:-bin/test-output}/contract-summary.txt"

# Every fuzz target for a longer budget (CI runs each for 20,000 inputs);
# budgets are execution counts, see scripts/fuzz.sh.
FUZZTIME ?= 2000000x
fuzz:
	bash scripts/fuzz.sh $(FUZZTIME)

# The fault and security tests of issue 9 in their long forms (every
# fault several times, longer outages; about half an hour), printing each
# fault's figures (docs/reliability.md). They are not part of `make test`:
# the fault tests skip unless SWITCHBACK_RELIABILITY is set; CI runs their
# short forms (`scripts/reliability.sh short`).
reliability:
	bash scripts/reliability.sh long

# One hour of a realistic mix of reads, operator changes, change
# notifications and webhooks against the binary, sampling its memory,
# goroutines, fds, sockets and consumer lag; fails if they grow past their
# tolerances (bench/soak). CI runs a 60 s form.
SOAK_DURATION ?= 1h
soak: build
	$(GO) run ./bench/soak -bin $(BIN) -duration $(SOAK_DURATION) -csv bin/soak.csv

test-short:
	$(GO) test -short -count=1 $(PKGS)

# staticcheck, pinned: installed from the Go module proxy into bin/ on
# first use (or when the pin changes); any finding fails the target.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck

lint: fmt vet staticcheck

staticcheck:
	@if ! $(STATICCHECK) -version 2>/dev/null | grep -qF '($(patsubst v%,%,$(STATICCHECK_VERSION)))'; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into bin/ (go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION))"; \
		GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || exit 1; \
	fi
	$(STATICCHECK) $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The API documents (schemas/openapi) against Redocly's recommended rules,
# every rule an error (recommended-strict), examples checked against their
# schemas. Needs Node and npm; CI installs the CLI at this version and
# passes REDOCLY=redocly.
REDOCLY_VERSION ?= 2.77.0
REDOCLY ?= npx --yes @redocly/cli@$(REDOCLY_VERSION)
openapi-lint:
	$(REDOCLY) lint --config schemas/openapi/redocly.yaml

# Validates deploy/ offline (compose-go, strict k8s.io/api decoding, every
# container's settings through internal/platform/config); a module of its own.
deploy-check:
	cd deploy/check && $(GO) mod tidy -diff && $(GO) run .

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./bench/... ./query/...

# Installs the servers that the integration tests and the demo use.
deps:
	@if command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server clickhouse-server clickhouse-client kafkacat prometheus jq; \
	else echo "apt-get not available: install redis-server, clickhouse-server and kafkacat by hand"; fi

clean:
	rm -rf bin
