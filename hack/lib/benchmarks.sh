# Sourced by the hack/bench-*.sh scripts.
#
# write_benchmarks_section NAME FILE [OUT]
#   Replaces the section NAME of OUT (default BENCHMARKS.md, relative to the
#   current folder): the lines from "<!-- NAME:begin -->" to
#   "<!-- NAME:end -->", markers included, become the content of FILE, which
#   holds both markers itself. When OUT lacks the markers, FILE is appended;
#   when OUT does not exist it is created with a "# Benchmarks" title. Other
#   sections, and text after the end marker, are left as they are. OUT is
#   replaced by a rename, so a failed run never leaves it half-written.
write_benchmarks_section() {
  local name="$1" section="$2" out="${3:-BENCHMARKS.md}"
  local begin="<!-- ${name}:begin -->" end="<!-- ${name}:end -->"
  [[ -f "$out" ]] || printf '# Benchmarks\n' >"$out"
  local tmp
  tmp="$(mktemp "${out}.XXXXXX")"
  if grep -qF "$begin" "$out" && grep -qF "$end" "$out"; then
    awk -v f="$section" -v b="$begin" -v e="$end" '
      index($0, b) { while ((getline l < f) > 0) print l; skip = 1; next }
      index($0, e) { skip = 0; next }
      !skip { print }' "$out" >"$tmp"
  else
    { cat "$out"; echo; cat "$section"; } >"$tmp"
  fi
  chmod 644 "$tmp"
  mv "$tmp" "$out"
}
