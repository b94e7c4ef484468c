#!/usr/bin/env bash
# Builds the stock etcd server pinned in hack/tools/etcd/go.mod into
# _output/bin/etcd (used by hack/bench-storage.sh and the e2e tests).
# Skips the build when _output/bin/etcd already reports the pinned version.
# Only the Go module proxy is needed; no prebuilt binary is downloaded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools/etcd"
OUT="${ROOT}/_output/bin/etcd"

want="$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "${TOOLS}/go.mod")"
want="${want#v}"
if [[ -z "${want}" ]]; then
  echo "build-etcd: cannot read the etcd server version from ${TOOLS}/go.mod" >&2
  exit 1
fi

if [[ -x "${OUT}" ]]; then
  have="$(env -i "${OUT}" --version 2>/dev/null | awk '/^etcd Version:/ {print $3}')"
  if [[ "${have}" == "${want}" ]]; then
    echo "build-etcd: ${OUT} is already etcd ${want}"
    exit 0
  fi
  echo "build-etcd: ${OUT} is etcd '${have:-unknown}', want ${want}; rebuilding"
fi

mkdir -p "$(dirname "${OUT}")"
echo "build-etcd: building etcd ${want} into ${OUT}"
(cd "${TOOLS}" && GOWORK=off CGO_ENABLED=0 go build -trimpath -o "${OUT}" .)
env -i "${OUT}" --version
