# olm-apiserver: see README.md.
.PHONY: run test test-unit test-e2e verify-codegen update-codegen build

build:
	go build -o _output/bin/olm-apiserver ./cmd/olm-apiserver

# Start the standalone server on an embedded bbolt file and apply artifacts/examples/.
run:
	hack/run-standalone.sh

# Every test: unit tests (storage with -race), then the end-to-end suite.
test: test-unit test-e2e

test-unit:
	hack/test-unit.sh

test-e2e:
	hack/test-e2e.sh

update-codegen:
	hack/update-codegen.sh

verify-codegen:
	hack/verify-codegen.sh
