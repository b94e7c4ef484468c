// Package framework starts a real local control plane for the end-to-end tests
// of issue 9: an etcd, a kube-apiserver wired for API aggregation on 127.0.0.1,
// and the olm-apiserver binary as a local process behind the APIService
// v1.olm.operatorframework.io. It also applies the manifests in artifacts/ the
// way a cluster admin would, with the in-cluster Deployment replaced by the
// local process (see ApplyArtifacts).
//
// Binaries are taken from _output/bin (built by hack/build-etcd.sh,
// hack/build-kube-apiserver.sh and `go build -o _output/bin/olm-apiserver
// ./cmd/olm-apiserver`; hack/test-e2e.sh does all three). RequireBinaries
// skips a test when they are missing, unless OLM_E2E=1 is set, in which case it
// fails it.
//
// Every process listens on 127.0.0.1 only, on ports picked at start, with
// certificates generated at start. Everything a helper starts is stopped by
// t.Cleanup; logs live in a temporary folder that is removed when the test
// passes and kept (its path and each log's tail are printed) when it fails.
package framework
