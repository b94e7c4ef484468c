#!/usr/bin/env bash
# Builds olm-apiserver, starts it in standalone mode on an embedded bbolt file
# under ${DATA_DIR:-_output/standalone}, applies artifacts/examples/ and shows
# the objects. It also starts a local registry (hack/push-catalog serve,
# go-containerregistry's in-memory registry on 127.0.0.1) holding the sample
# catalog artifacts/catalog/configs and its bundle images built from
# artifacts/catalog/bundles (push-catalog rewrites the catalog's placeholder
# registry localhost:5000 to the registry's real address), applies
# artifacts/catalog/clustercatalog.yaml pointed at it, waits until the catalog
# is Serving and reads its content. Standalone mode has no cluster to install
# on: to see a ClusterExtension installed, use hack/local-up.sh.
# The server stays in the foreground until Ctrl-C.
#
# Environment: DATA_DIR (data directory), PORT (default 8443),
# REGISTRY_PORT (default 0: a free port), RUN_SECONDS (stop after that many
# seconds; for scripted use).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
DATA_DIR=${DATA_DIR:-${ROOT}/_output/standalone}
PORT=${PORT:-8443}
BIN=${ROOT}/_output/bin/olm-apiserver
PUSH=${ROOT}/_output/bin/push-catalog
REGISTRY_PORT=${REGISTRY_PORT:-0}

echo ">> building ${BIN} and ${PUSH}"
go build -o "${BIN}" ./cmd/olm-apiserver
go build -o "${PUSH}" ./hack/push-catalog

mkdir -p "${DATA_DIR}"
REG_ADDR_FILE=${DATA_DIR}/registry.addr
REG_LOG=${DATA_DIR}/registry.log
rm -f "${REG_ADDR_FILE}"
echo ">> starting a local registry with the sample catalog and bundles (log: ${REG_LOG})"
"${PUSH}" serve --addr "127.0.0.1:${REGISTRY_PORT}" --dir artifacts/catalog/configs --repo olm/sample-catalog:latest \
  --bundles artifacts/catalog/bundles --addr-file "${REG_ADDR_FILE}" >"${REG_LOG}" 2>&1 &
REG_PID=$!
trap 'kill ${REG_PID} 2>/dev/null || true; wait ${REG_PID} 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 60); do
  [ -f "${REG_ADDR_FILE}" ] && break
  if ! kill -0 "${REG_PID}" 2>/dev/null; then
    echo "the registry exited:" >&2; cat "${REG_LOG}" >&2; exit 1
  fi
  sleep 0.2
done
REGISTRY=$(cat "${REG_ADDR_FILE}")

LOG=${DATA_DIR}/olm-apiserver.log
echo ">> starting olm-apiserver --standalone (log: ${LOG})"
"${BIN}" --standalone --data-dir "${DATA_DIR}" --secure-port "${PORT}" >"${LOG}" 2>&1 &
PID=$!
stop() { kill ${PID} ${REG_PID} 2>/dev/null || true; wait ${PID} ${REG_PID} 2>/dev/null || true; }
trap stop EXIT
# Ctrl-C is the normal way to stop: stop both processes and exit 0.
trap 'stop; trap - EXIT; exit 0' INT TERM

export KUBECONFIG=${DATA_DIR}/kubeconfig
for _ in $(seq 1 60); do
  if ! kill -0 "${PID}" 2>/dev/null; then
    echo "olm-apiserver exited; last log lines:" >&2; tail -20 "${LOG}" >&2; exit 1
  fi
  if [ -f "${KUBECONFIG}" ] && kubectl get --raw /readyz >/dev/null 2>&1; then break; fi
  sleep 0.5
done
kubectl get --raw /readyz >/dev/null

echo ">> kubectl apply -f artifacts/examples/"
kubectl apply -f artifacts/examples/
echo ">> kubectl apply the sample catalog from the local registry ${REGISTRY}"
sed "s#localhost:5000#${REGISTRY}#" artifacts/catalog/clustercatalog.yaml | kubectl apply -f -
echo ">> kubectl wait --for=condition=Serving clustercatalog/sample"
if ! kubectl wait --for=condition=Serving clustercatalog/sample --timeout=60s; then
  kubectl get clustercatalog sample -o yaml >&2; exit 1
fi
echo ">> kubectl get clustercatalogs,clusterextensions"
kubectl get clustercatalogs,clusterextensions
CONTENT=/apis/olm.operatorframework.io/v1/clustercatalogs/sample/content
echo ">> kubectl get --raw '${CONTENT}?package=hello-operator&schema=olm.channel'"
kubectl get --raw "${CONTENT}?package=hello-operator&schema=olm.channel"
echo ">> kubectl get --raw '${CONTENT}?package=echo-operator&schema=olm.bundle' (bundle image in the local registry)"
kubectl get --raw "${CONTENT}?package=echo-operator&schema=olm.bundle"
cat <<MSG

olm-apiserver is running on https://127.0.0.1:${PORT} (pid ${PID}).
In another shell:
  export KUBECONFIG=${KUBECONFIG}
  kubectl get clustercatalogs,clusterextensions
  kubectl get --raw '${CONTENT}?package=goodbye-operator'
  kubectl explain clusterextension.spec.source.catalog.version
Press Ctrl-C to stop.
MSG
if [ -n "${RUN_SECONDS:-}" ]; then
  sleep "${RUN_SECONDS}"
else
  wait "${PID}"
fi
