#!/usr/bin/env bash
# Fails when the generated code is stale: regenerates into a scratch copy of
# the repository and compares it with the working tree.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
DIFF=$(mktemp)
trap 'rm -rf "${SCRATCH}" "${DIFF}"' EXIT

# Copy the tracked and untracked-but-not-ignored files, without _output.
cd "${ROOT}"
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "${SCRATCH}/" 2>/dev/null || true
mkdir -p "${SCRATCH}/_output" && [ -d "${ROOT}/_output/codegen-bin" ] && cp -r "${ROOT}/_output/codegen-bin" "${SCRATCH}/_output/" || true
( cd "${SCRATCH}" && git init -q && hack/update-codegen.sh >/dev/null )

status=0
for dir in pkg/generated pkg/apis hack/api-rules-violations.list; do
  if ! diff -Nru "${ROOT}/${dir}" "${SCRATCH}/${dir}" >"${DIFF}" 2>&1; then
    echo "generated code under ${dir} is stale; run hack/update-codegen.sh" >&2
    head -50 "${DIFF}" >&2
    status=1
  fi
done
[ "${status}" -eq 0 ] && echo "generated code is up to date"
exit "${status}"
