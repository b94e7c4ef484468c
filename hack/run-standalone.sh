#!/usr/bin/env bash
# Builds olm-apiserver, starts it in standalone mode on an embedded bbolt file
# under ${DATA_DIR:-_output/standalone}, applies artifacts/examples/ and shows
# the objects. The server stays in the foreground until Ctrl-C.
#
# Environment: DATA_DIR (data directory), PORT (default 8443),
# RUN_SECONDS (stop after that many seconds; for scripted use).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
DATA_DIR=${DATA_DIR:-${ROOT}/_output/standalone}
PORT=${PORT:-8443}
BIN=${ROOT}/_output/bin/olm-apiserver

echo ">> building ${BIN}"
go build -o "${BIN}" ./cmd/olm-apiserver

mkdir -p "${DATA_DIR}"
LOG=${DATA_DIR}/olm-apiserver.log
echo ">> starting olm-apiserver --standalone (log: ${LOG})"
"${BIN}" --standalone --data-dir "${DATA_DIR}" --secure-port "${PORT}" >"${LOG}" 2>&1 &
PID=$!
trap 'kill ${PID} 2>/dev/null; wait ${PID} 2>/dev/null || true' EXIT INT TERM

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
echo ">> kubectl get clustercatalogs,clusterextensions"
kubectl get clustercatalogs,clusterextensions
cat <<MSG

olm-apiserver is running on https://127.0.0.1:${PORT} (pid ${PID}).
In another shell:
  export KUBECONFIG=${KUBECONFIG}
  kubectl get clustercatalogs,clusterextensions
  kubectl explain clusterextension.spec.source.catalog.version
Press Ctrl-C to stop.
MSG
if [ -n "${RUN_SECONDS:-}" ]; then
  sleep "${RUN_SECONDS}"
else
  wait "${PID}"
fi
