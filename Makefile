# The two commands: `make run` brings up the embedded default end to end;
# `make test` runs every test. See README.md.
GO      ?= go
BIN     := bin/eo
ADDR    ?= 127.0.0.1:8080

.PHONY: run test build vet fmt bench clean docs

build:
	$(GO) build -o $(BIN) ./cmd/eo

# Generate the synthetic world if the store is empty, run the pipeline,
# publish the snapshot to .eo/store, and serve it.
run: build
	./$(BIN) up --addr $(ADDR)

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 14m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin .eo

# Rebuild the embedded API reference page from the OpenAPI contract with the
# same flags and environment .ci/run checks it with.
docs:
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		redocly build-docs edge/openapi.yaml --inlineBundle --title "eo API" -o edge/docs.html
