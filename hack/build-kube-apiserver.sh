#!/usr/bin/env bash
# Builds the real kube-apiserver used by the e2e tests (issue 9) into
# _output/bin/kube-apiserver, from the tools module in hack/tools/kube-apiserver
# (k8s.io/kubernetes v1.37.2 with its staging modules replaced by v0.37.2).
#
# The version variables of k8s.io/component-base/version and
# k8s.io/client-go/pkg/version are set with -ldflags -X, as Kubernetes'
# hack/lib/version.sh does, so the binary reports v1.37.2 and not
# v0.0.0-master. If the binary already exists and reports that version the
# build is skipped; set FORCE=1 to rebuild. A cold build takes 11-17 minutes on
# 2 cores; afterwards Go's build cache makes it fast.
#
# Usage: hack/build-kube-apiserver.sh   (from anywhere inside the repo)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="v1.37.2"
MAJOR="1"
MINOR="37"
OUT="${ROOT}/_output/bin/kube-apiserver"

if [[ -x "${OUT}" && "${FORCE:-0}" != "1" ]]; then
  if have="$("${OUT}" --version 2>/dev/null)" && [[ "${have}" == "Kubernetes ${VERSION}" ]]; then
    echo "kube-apiserver ${VERSION} already built: ${OUT}"
    exit 0
  fi
  echo "existing ${OUT} reports '${have:-nothing}', rebuilding"
fi

mkdir -p "$(dirname "${OUT}")"
build_date="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
ldflags=()
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=(
    "-X '${pkg}.gitVersion=${VERSION}'"
    "-X '${pkg}.gitMajor=${MAJOR}'"
    "-X '${pkg}.gitMinor=${MINOR}'"
    "-X '${pkg}.gitTreeState=clean'"
    "-X '${pkg}.buildDate=${build_date}'"
  )
done

echo "building kube-apiserver ${VERSION} into ${OUT} (cold: 11-17 min on 2 cores)"
start=$(date +%s)
cd "${ROOT}/hack/tools/kube-apiserver"
# Build into a temporary name first so an interrupted build never leaves a
# half-written binary behind that a later run would take as valid.
GOWORK=off go build -ldflags "${ldflags[*]}" -o "${OUT}.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "${OUT}.tmp" "${OUT}"
echo "built $("${OUT}" --version) in $(( $(date +%s) - start ))s"
