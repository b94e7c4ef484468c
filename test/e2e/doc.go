// Package e2e holds the end-to-end tests of issue 9: a real etcd and
// kube-apiserver (test/framework), the manifests of artifacts/ applied to it,
// olm-apiserver behind the APIService v1.olm.operatorframework.io, and the
// machine's kubectl.
//
// Run them with hack/test-e2e.sh, which builds etcd, kube-apiserver and
// olm-apiserver into _output/bin and runs `go test ./test/... -v` with
// OLM_E2E=1 (a missing binary then fails instead of skipping). A plain
// `go test ./test/e2e/` skips the cluster tests when the binaries are absent;
// the static checks of artifacts/ always run.
package e2e
