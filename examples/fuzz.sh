#!/usr/bin/env bash
# The README's `llvmaccel fuzz` and campaign examples, run as written with
# short budgets (test/py/test_examples.py runs this file). Findings and the
# campaign's record go to a scratch directory; run from the repository root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
seconds="${FUZZ_EXAMPLE_SECONDS:-10}"
# The loop kernels only: the MLIR task programs' error paths fault now and
# then in the original program too (the async runtime), which a short example
# must not trip on (CI's fuzz run leaves them out for the same reason).
shapes=$(python3 -c 'from llvmaccel import kernelgen; print(" ".join("--shape " + s for s in kernelgen.LOOP_SHAPES))')

llvmaccel fuzz --pass accel-prefetch --seconds "$seconds" --out "$work/findings" --profile $shapes   # where the time goes, per stage
llvmaccel fuzz --pass accel-masked-load --seconds "$seconds" --jobs 2 --out "$work/findings" $shapes   # two worker processes (two cores)
llvmaccel fuzz --pass accel-phi-decompose --kernels 48 --group 1 --out "$work/findings" $shapes   # a child per kernel and version, as before
python3 bench/verify/campaign.py run --seconds "$seconds" --pass accel-prefetch --record "$work/campaign.jsonl" --out "$work/findings" $shapes
python3 bench/verify/campaign.py totals --markdown --record "$work/campaign.jsonl"
