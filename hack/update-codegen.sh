#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated files of
# pkg/apis with k8s.io/code-generator's kube_codegen.sh (the version in go.mod).
# Usage: hack/update-codegen.sh
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=$(go list -m)
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# Generators are installed into a folder of ours, not the user's GOBIN.
export GOBIN="${ROOT}/_output/codegen-bin"
mkdir -p "${GOBIN}"

source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${MODULE}/pkg/generated/openapi" \
    --report-filename "${ROOT}/hack/api-rules-violations.list" \
    --output-model-name-file zz_generated.model_name.go \
    ${UPDATE_API_KNOWN_VIOLATIONS:+--update-report} \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run ./hack/models-schema) \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"
