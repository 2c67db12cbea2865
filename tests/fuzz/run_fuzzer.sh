#!/usr/bin/env bash
# Fuzzes one target for a bounded time (the sh_test of tally_fuzzer).
#
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR REGRESSIONS_DIR
# Seconds: $TALLY_FUZZ_SECONDS (default 30). The committed seeds are copied to
# a scratch directory first, so the new inputs libFuzzer saves never land in
# the source tree; the regressions are replayed as a second corpus. A crash,
# leak, timeout (10 s per input) or an input that takes over 2 GiB fails the
# test, and the crashing input is kept in the test's undeclared outputs
# (bazel-testlogs/.../test.outputs/). The last lines name the run count:
# `fuzz <name>: N runs in S s`.
set -euo pipefail

fuzzer="$1"
corpus="$2"
regressions="$3"
seconds="${TALLY_FUZZ_SECONDS:-30}"
name="$(basename "${corpus}")"

scratch="${TEST_TMPDIR:-$(mktemp -d)}/${name}"
mkdir -p "${scratch}/corpus" "${scratch}/regressions"
if [[ -d "${corpus}" ]]; then cp "${corpus}"/* "${scratch}/corpus/"; fi
if [[ -d "${regressions}" ]]; then cp "${regressions}"/* "${scratch}/regressions/" 2>/dev/null || true; fi
artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-${scratch}}/"

log="${scratch}/fuzz.log"
rc=0
"${fuzzer}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="${artifacts}" \
  "${scratch}/corpus" "${scratch}/regressions" >"${log}" 2>&1 || rc=$?
# The log can be long (every new coverage point): the start and the end.
head -n 20 "${log}"
echo "..."
tail -n 60 "${log}"
runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -n 1)"
secs="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "${log}" | tail -n 1)"
echo "fuzz ${name}: ${runs:-?} runs in ${secs:-?} s (exit ${rc})"
exit "${rc}"
