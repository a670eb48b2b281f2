# The two commands: `make run` brings up the embedded default end to end;
# `make test` runs every test. See README.md.
GO      ?= go
BIN     := bin/eo
ADDR    ?= 127.0.0.1:8080

.PHONY: run test lint build vet fmt bench clean docs

build:
	$(GO) build -o $(BIN) ./cmd/eo

# Generate the synthetic world if the store is empty, run the pipeline,
# publish the snapshot to .eo/store, and serve it.
run: build
	./$(BIN) up --addr $(ADDR)

test: lint
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 14m ./...

# golangci-lint, the pinned version, with the checked-in .golangci.yml: go run
# builds it once into Go's cache, so make test needs nothing but Go for it.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
lint:
	$(GOLANGCI_LINT) run ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin .eo

# Rebuild the embedded API reference page from the OpenAPI contract (.ci/run
# checks edge/docs.html with make docs DOCS=<a temporary file>). The page holds
# everything it shows: Redoc draws its attribution logo from cdn.redoc.ly (no
# option turns it off), so its two URLs become the same word drawn inline.
DOCS ?= edge/docs.html
REDOC_LOGO = data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27 width=%2764%27 height=%2716%27%3E%3Ctext x=%270%27 y=%2713%27 font-family=%27sans-serif%27 font-size=%2713%27 font-weight=%27600%27 fill=%27%23475467%27%3ERedocly%3C/text%3E%3C/svg%3E
REDOC_LOGO_MINI = data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27 width=%2716%27 height=%2716%27%3E%3Ctext x=%273%27 y=%2713%27 font-family=%27sans-serif%27 font-size=%2713%27 font-weight=%27600%27 fill=%27%23475467%27%3ER%3C/text%3E%3C/svg%3E
docs:
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		redocly build-docs edge/openapi.yaml --inlineBundle --title "eo API" -o $(DOCS)
	sed -i -e 's|https://cdn.redoc.ly/redoc/logo-mini-full.svg|$(REDOC_LOGO)|g' \
		-e 's|https://cdn.redoc.ly/redoc/logo-mini.svg|$(REDOC_LOGO_MINI)|g' $(DOCS)
	! grep -o 'https://cdn\.redoc\.ly[^`"]*' $(DOCS)
