#!/bin/bash
# A small lit: runs the cases of .ir pass tests, as MLIR's tests are run.
#
#   run_ir_test.sh TALLY_OPT FILE.ir...
#
# A file is split into cases at `// -----` lines (mlir-opt's
# -split-input-file); each case is written to its own file with the other
# cases' lines blanked, so tally_opt's "IR line N" and FileCheck's
# diagnostics give the line in FILE.ir. Each case runs its own
# `// RUN:` lines (a trailing `\` continues one) under bash -o pipefail, with
# %s the case's file and %t a scratch path; `tally_opt`, `FileCheck` and
# `not` are on PATH (LLVM's, from Debian's llvm-14-tools). The parser skips
# `//` lines, so the RUN and CHECK lines stay in the input.
#
# Every case needs a RUN line and every file a must-reject case (a RUN line
# starting `not tally_opt`). Fails listing each failing file:line.
set -u
# Debian 12 ships llvm-14-tools, Debian 13 llvm-19-tools: take the newest.
llvm=""
for dir in $(ls -d /usr/lib/llvm-*/bin 2>/dev/null | sort -t- -k2,2n); do
  if [[ -x "${dir}/FileCheck" && -x "${dir}/not" ]]; then llvm="${dir}"; fi
done
if [[ -z "${llvm}" ]]; then
  echo "FAILED: no /usr/lib/llvm-*/bin/FileCheck and not (Debian package llvm-N-tools; scripts/setup installs it)"
  exit 1
fi
opt="$(realpath "$1")"; shift
scratch="$(mktemp -d "${TEST_TMPDIR:-/tmp}/ir_test.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT
mkdir "${scratch}/bin"
ln -s "${opt}" "${scratch}/bin/tally_opt"
ln -s "${llvm}/FileCheck" "${scratch}/bin/FileCheck"
ln -s "${llvm}/not" "${scratch}/bin/not"
export PATH="${scratch}/bin:${PATH}"

failed=()
for file in "$@"; do
  base="$(basename "${file}" .ir)"
  ncases="$(grep -c '^// -----$' "${file}")"; ncases=$((ncases + 1))
  rejects=0
  for ((k = 1; k <= ncases; ++k)); do
    case_file="${scratch}/${base}.case${k}.ir"
    # Case k's lines as they are, every other line blank.
    awk -v k="${k}" '/^\/\/ -----$/ { ++c; print ""; next }
                     { print (c + 1 == k ? $0 : "") }' "${file}" >"${case_file}"
    # RUN lines with their line numbers; `\` at the end joins the next one.
    mapfile -t runs < <(awk '
      match($0, /\/\/ RUN: ?/) { s = substr($0, RSTART + RLENGTH); if (cmd == "") at = NR
                                 if (s ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, "", s); cmd = cmd s " "; next }
                                 print at "\t" cmd s; cmd = "" }' "${case_file}")
    if [[ ${#runs[@]} -eq 0 ]]; then
      echo "FAILED: ${file} case ${k}: no RUN line"
      failed+=("${file} (case ${k}: no RUN line)")
      continue
    fi
    for run in "${runs[@]}"; do
      line="${run%%$'\t'*}"
      cmd="${run#*$'\t'}"
      [[ "${cmd}" == "not tally_opt"* ]] && rejects=$((rejects + 1))
      cmd="${cmd//%s/${case_file}}"
      cmd="${cmd//%t/${scratch}/${base}.case${k}.tmp}"
      if out="$(bash -o pipefail -c "${cmd}" 2>&1)"; then
        echo "ok: ${file}:${line}"
      else
        echo "FAILED: ${file}:${line}: ${cmd}"
        [[ -n "${out}" ]] && sed 's/^/  | /' <<<"${out}"
        failed+=("${file}:${line}")
      fi
    done
  done
  if [[ ${rejects} -eq 0 ]]; then
    echo "FAILED: ${file}: no must-reject case (a RUN line starting 'not tally_opt')"
    failed+=("${file} (no must-reject case)")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo
  echo "${#failed[@]} failing:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
