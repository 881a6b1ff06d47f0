# Switchback: `make run` starts the whole pipeline in one process on
# embedded defaults; `make test` runs every test that this machine can run.
GO        ?= go
BIN       := bin/switchback
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
TEST_TIMEOUT ?= 14m

export SWITCHBACK_DATA_DIR ?= ./var

.PHONY: all build run test test-short lint bench deps fmt vet clean e2e fuzz reliability soak openapi-lint

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/switchback

# The demo: embedded broker, Redis (redis-server if installed, else
# miniredis), ClickHouse (clickhouse-server if installed, else parked).
run: build
	SWITCHBACK_DEMO=$${SWITCHBACK_DEMO:-true} \
	SWITCHBACK_WEBHOOK_ALLOW_HTTP=$${SWITCHBACK_WEBHOOK_ALLOW_HTTP:-true} \
	SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=$${SWITCHBACK_WEBHOOK_ALLOW_PRIVATE:-true} \
	./$(BIN) run

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

STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $$($(GO) env GOPATH)/bin/staticcheck)

lint: fmt vet
	@if [ -x "$(STATICCHECK)" ]; then $(STATICCHECK) $(PKGS); \
	else echo "staticcheck not installed: go install honnef.co/go/tools/cmd/staticcheck@latest"; fi

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./bench/... ./query/...

# Installs the servers that the integration tests and the demo use.
deps:
	@if command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server clickhouse-server kafkacat prometheus; \
	else echo "apt-get not available: install redis-server, clickhouse-server and kafkacat by hand"; fi

clean:
	rm -rf bin
