#!/usr/bin/env bash
# Starts, for humans, the local cluster the e2e tests use, to see the whole
# main job: etcd and kube-apiserver on 127.0.0.1 (test/framework, through
# hack/local-up/), artifacts/ applied with olm-apiserver running as a local
# process behind the APIService v1.olm.operatorframework.io, and a local
# registry (hack/push-catalog serve) holding the sample catalog
# artifacts/catalog/configs and its bundle images. It prints the admin
# kubeconfig and the commands to try, and stays up until Ctrl-C.
#
# Needs: Go, kubectl on PATH. Builds into _output/bin what is missing or stale
# (etcd and kube-apiserver once per machine: kube-apiserver takes 11-17 min
# cold; olm-apiserver, push-catalog and local-up each time, from Go's cache).
#
# Environment:
#   LOCAL_UP_DIR   folder for the kubeconfig, the sample ClusterCatalog and the
#                  registry log (default _output/local-up)
#   REGISTRY_PORT  port of the registry (default 0: a free one)
#   DEMO=1         run the steps printed below once everything is up: apply
#                  the ClusterCatalog and the ClusterExtension, wait for
#                  Installed=True, show the operator's objects
#   RUN_SECONDS    stop after that many seconds instead of waiting for Ctrl-C
#   OLM_E2E_KEEP=1 keep the cluster's work folder (logs, certificates) at exit
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
DIR=${LOCAL_UP_DIR:-${ROOT}/_output/local-up}
REGISTRY_PORT=${REGISTRY_PORT:-0}
BIN=${ROOT}/_output/bin

command -v kubectl >/dev/null || { echo "local-up: kubectl is not on PATH" >&2; exit 1; }
hack/build-etcd.sh
hack/build-kube-apiserver.sh
echo ">> building olm-apiserver, push-catalog and local-up into ${BIN}"
go build -o "${BIN}/olm-apiserver" ./cmd/olm-apiserver
go build -o "${BIN}/push-catalog" ./hack/push-catalog
go build -o "${BIN}/local-up" ./hack/local-up

mkdir -p "${DIR}"
rm -f "${DIR}/registry.addr" "${DIR}/ready"
PIDS=()
stop() {
  # local-up stops olm-apiserver, kube-apiserver and etcd on SIGTERM.
  for pid in "${PIDS[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "${pid}" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM

echo ">> starting a local registry with the sample catalog and bundles (log: ${DIR}/registry.log)"
"${BIN}/push-catalog" serve --addr "127.0.0.1:${REGISTRY_PORT}" \
  --dir artifacts/catalog/configs --repo olm/sample-catalog:latest --bundles artifacts/catalog/bundles \
  --addr-file "${DIR}/registry.addr" >"${DIR}/registry.log" 2>&1 &
REG_PID=$!
PIDS+=("${REG_PID}")
for _ in $(seq 1 100); do
  [ -f "${DIR}/registry.addr" ] && break
  kill -0 "${REG_PID}" 2>/dev/null || { echo "the registry exited:" >&2; cat "${DIR}/registry.log" >&2; exit 1; }
  sleep 0.2
done
[ -f "${DIR}/registry.addr" ] || { echo "the registry did not start in 20 s" >&2; exit 1; }
REGISTRY=$(cat "${DIR}/registry.addr")
sed "s#localhost:5000#${REGISTRY}#" artifacts/catalog/clustercatalog.yaml >"${DIR}/clustercatalog.yaml"

echo ">> starting etcd, kube-apiserver and olm-apiserver (hack/local-up)"
"${BIN}/local-up" --ready-file "${DIR}/ready" --kubeconfig-out "${DIR}/kubeconfig" &
UP_PID=$!
PIDS=("${UP_PID}" "${PIDS[@]}")
for _ in $(seq 1 1500); do
  [ -f "${DIR}/ready" ] && break
  kill -0 "${UP_PID}" 2>/dev/null || { echo "local-up failed (see above)" >&2; exit 1; }
  sleep 0.2
done
[ -f "${DIR}/ready" ] || { echo "the cluster was not up within 5 minutes" >&2; exit 1; }
export KUBECONFIG=${DIR}/kubeconfig

cat <<MSG

The local cluster is up: kube-apiserver with olm-apiserver aggregated, and a
registry on ${REGISTRY} serving the sample catalog and its bundles.
There is no kube-controller-manager, scheduler or kubelet: Deployments are
stored but no pods run.

Admin kubeconfig: ${KUBECONFIG}
In another shell:
  export KUBECONFIG=${KUBECONFIG}
  kubectl get apiservice v1.olm.operatorframework.io
  kubectl apply -f ${DIR}/clustercatalog.yaml
  kubectl wait --for=condition=Serving clustercatalog/sample
  kubectl get --raw '/apis/olm.operatorframework.io/v1/clustercatalogs/sample/content?package=hello-operator&schema=olm.channel'
  kubectl create namespace hello
  kubectl apply -f artifacts/catalog/clusterextension.yaml
  kubectl get -n hello deployments -w        # hello-operator-controller-manager appears
  kubectl wait --for=condition=Installed clusterextension/hello
  kubectl get clusterextension hello -o wide
  # upgrade 0.2.1 -> 1.0.0: the ConfigMap hello-operator-config is pruned
  kubectl patch clusterextension hello --type merge -p '{"spec":{"source":{"catalog":{"version":"1.0.0"}}}}'
  kubectl delete clusterextension hello     # removes what it installed
Press Ctrl-C to stop.
MSG

if [ "${DEMO:-}" = 1 ]; then
  set -o xtrace
  kubectl get apiservice v1.olm.operatorframework.io
  kubectl apply -f "${DIR}/clustercatalog.yaml"
  kubectl wait --for=condition=Serving clustercatalog/sample --timeout=120s
  kubectl get --raw '/apis/olm.operatorframework.io/v1/clustercatalogs/sample/content?package=hello-operator&schema=olm.package'
  kubectl create namespace hello
  kubectl apply -f artifacts/catalog/clusterextension.yaml
  kubectl wait --for=condition=Installed clusterextension/hello --timeout=180s
  kubectl get clusterextension hello -o wide
  kubectl get -n hello deployments,serviceaccounts,services,configmaps -l olm.operatorframework.io/owner-name=hello
  kubectl get crd greetings.hello.example.com
  kubectl patch clusterextension hello --type merge -p '{"spec":{"source":{"catalog":{"version":"1.0.0"}}}}'
  kubectl wait --for=jsonpath='{.status.install.bundle.version}'=1.0.0 clusterextension/hello --timeout=180s
  kubectl get clusterextension hello -o wide
  kubectl get -n hello deployments,services,configmaps -l olm.operatorframework.io/owner-name=hello
  kubectl get crd greetings.hello.example.com -o jsonpath='{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties}{"\n"}'
  set +o xtrace
fi

if [ -n "${RUN_SECONDS:-}" ]; then
  sleep "${RUN_SECONDS}"
else
  wait "${UP_PID}"
fi
