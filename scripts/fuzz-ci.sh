#!/usr/bin/env bash
# The bounded fuzz run of CI (`make fuzz-ci`, .ci/run, the workflow): every
# pass in the plugin's catalog gets an equal share of the budget (seconds,
# default 120 in all), two thirds with fixed seeds (the same kernels every
# run) and one third with seeds from the clock (printed, so a finding is
# reproduced with `llvmaccel fuzz --seed N`). Any finding fails the run; each
# is kept, reduced (llvm-reduce gets at most FUZZ_REDUCE_SECONDS, default 120,
# so a finding cannot take the run past CI's budget), under build/fuzz-findings
# with the command that shows it.
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${1:-120}"
bin=.venv/bin
passes=$("$bin/python" -c 'import llvmaccel; print(" ".join(p.name for p in llvmaccel.passes()))')
count=$(wc -w <<<"$passes")
share=$(( budget / count ))
fixed=$(( share * 2 / 3 ))
timed=$(( share - fixed ))
seed=$(( $(date +%s) % 100000000 ))
out=build/fuzz-findings
rm -rf "$out" build/fuzz-ci.jsonl
status=0
# The loop kernels, and for accel-async-fusion the task programs (MLIR async
# graphs on the real runtime, GPU launch loops on the recording runtime).
shapes() {
  local list
  if [ "$1" = accel-async-fusion ]; then
    list=$("$bin/python" -c 'from llvmaccel import taskgen; print(*taskgen.ASYNC_SHAPES, *taskgen.LAUNCH_SHAPES)')
  else
    list=$("$bin/python" -c 'from llvmaccel import kernelgen; print(*kernelgen.LOOP_SHAPES)')
  fi
  for s in $list; do printf -- '--shape %s ' "$s"; done
}
for p in $passes; do
  echo "fuzz-ci: $p: ${fixed} s with fixed seeds from 0, ${timed} s from seed $seed"
  read -r -a picked <<<"$(shapes "$p")"
  "$bin/llvmaccel" fuzz --pass "$p" --seconds "$fixed" --seed 0 --out "$out" \
    --json build/fuzz-ci.jsonl --reduce-seconds "${FUZZ_REDUCE_SECONDS:-120}" \
    "${picked[@]}" || status=1
  "$bin/llvmaccel" fuzz --pass "$p" --seconds "$timed" --seed "$seed" --out "$out" \
    --json build/fuzz-ci.jsonl --reduce-seconds "${FUZZ_REDUCE_SECONDS:-120}" \
    "${picked[@]}" || status=1
done
if [ "$status" -ne 0 ]; then
  echo "fuzz-ci: FINDINGS (kept in $out; make each a lit regression test):" >&2
  ls "$out" >&2 || true
fi
exit "$status"
