# olm-apiserver: see README.md.
.PHONY: run test test-unit test-e2e tools verify-codegen update-codegen build local-up

build:
	go build -o _output/bin/olm-apiserver ./cmd/olm-apiserver

# Start the standalone server on an embedded bbolt file with a local registry
# holding the sample catalog, and apply artifacts/examples/.
run:
	hack/run-standalone.sh

# Every test: build etcd and kube-apiserver (cached in _output/bin), then the
# unit tests (storage, controllers, content store and server under -race; the controller tests that
# need a real kube-apiserver fail instead of skipping), then the e2e suite.
test: tools
	OLM_E2E=1 hack/test-unit.sh
	hack/test-e2e.sh

# Unit tests alone; tests that need kube-apiserver skip when it is not built.
test-unit:
	hack/test-unit.sh

test-e2e:
	hack/test-e2e.sh

tools:
	hack/build-etcd.sh
	hack/build-kube-apiserver.sh

# A local etcd + kube-apiserver with olm-apiserver behind the APIService.
local-up:
	hack/local-up.sh

update-codegen:
	hack/update-codegen.sh

verify-codegen:
	hack/verify-codegen.sh
