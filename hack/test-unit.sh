#!/usr/bin/env bash
# Unit and package tests: go vet, then go test of every package outside test/
# (the end-to-end suite has its own script), with the race detector on the
# packages with concurrency worth checking: storage, controllers, the content
# store (revisions swapped under readers) and the server (leader election,
# content follower, the controllers' start and stop).
# Extra arguments go to every `go test`.
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

RACE_PKGS='/pkg/storage/|/pkg/controllers/|/pkg/content$|/pkg/cmd/server$'
mapfile -t all < <(go list ./... | grep -v "/test/")
mapfile -t race < <(printf '%s\n' "${all[@]}" | grep -E "${RACE_PKGS}" || true)
mapfile -t plain < <(printf '%s\n' "${all[@]}" | grep -vE "${RACE_PKGS}")

echo ">> go vet ./..."
go vet ./...
echo ">> go test (${#plain[@]} packages)"
go test -count=1 "$@" "${plain[@]}"
if [ "${#race[@]}" -gt 0 ]; then
  # -v so that the log names every storage conformance test that ran.
  echo ">> go test -race -v (${#race[@]} packages)"
  go test -race -count=1 -v "$@" "${race[@]}" 2>&1 | grep -avE '^[IWE][0-9]{4} '
fi
