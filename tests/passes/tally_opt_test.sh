#!/bin/bash
# tally_opt runs every registered pass by name over a text-IR collection:
# the compiler's whole pipeline for cpu and for cuda:1 (planned, not run),
# each pass alone, and its output parses again. An unknown pass is one
# error line listing the known ones; a bad argument an error line and the
# usage line.
set -u
opt="$1"
ir="$2"
fail=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok: ${name}"; else echo "FAILED: ${name}"; fail=1; fi
}
all=canonicalize,cse,eliminate-dead-states,narrow-states,remove-host-syncs,place,fuse,insert-transfers,prove-single-device

out="$("${opt}" --passes="${all}" "${ir}" 2>&1)"; rc=$?
check "whole pipeline on cpu exits 0" test "${rc}" -eq 0
check "its output parses again" bash -c '"$1" --passes= - <<<"$2" >/dev/null' _ "${opt}" "${out}"
check "a fused kernel stays on cpu" grep -q 'bl_confmat' <<<"${out}"

out="$("${opt}" --passes="${all}" --device=cuda:1 "${ir}" 2>&1)"; rc=$?
check "whole pipeline for cuda:1 exits 0" test "${rc}" -eq 0
check "every value is placed on cuda:1" bash -c '! grep -q "@cpu" <<<"$1" && grep -q "@cuda:1" <<<"$1"' _ "${out}"

for p in ${all//,/ }; do
  "${opt}" --passes="${p}" "${ir}" >/dev/null 2>&1
  check "pass ${p} alone" test $? -eq 0
done

err="$("${opt}" --passes=cse,bogus "${ir}" 2>&1)"; rc=$?
check "unknown pass exits 1" test "${rc}" -eq 1
check "unknown pass names it and the known ones" bash -c \
  'grep -q "unknown pass '"'"'bogus'"'"'" <<<"$1" && grep -q "fuse" <<<"$1" && test "$(wc -l <<<"$1")" -eq 1' _ "${err}"
# A bad argument: one error line naming it, then the usage line, exit 1.
for bad in --device "--pass=cse" "--passes=cse --bogus" "--device=" "two files"; do
  read -r -a args <<<"${bad}"
  err="$("${opt}" "${args[@]}" "${ir}" 2>&1)"; rc=$?
  check "bad argument '${bad}' exits 1" test "${rc}" -eq 1
  check "bad argument '${bad}' prints an error and the usage line" bash -c \
    'test "$(wc -l <<<"$1")" -eq 2 && grep -q "^tally_opt: error: " <<<"$1" &&
     grep -q "^usage: tally_opt \[--passes=PASS,PASS...\] \[--device=DEVICE\] \[FILE.ir|-\]$" <<<"$1"' _ "${err}"
done
out="$("${opt}" --help 2>&1)"; rc=$?
check "--help prints the usage line and exits 0" bash -c 'test "$1" -eq 0 && grep -q "^usage: tally_opt " <<<"$2"' _ "${rc}" "${out}"
exit "${fail}"
