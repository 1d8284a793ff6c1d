#!/usr/bin/env bash
# The compiled GPU smoke job on the real ExecuTorch tree, on a GPU machine with nvcc, g++ and PyTorch
# (CUDA) but no network: run from the repository root, with smoke/device/pack carried (pack_tree.sh).
# Needs only python3 with torch: the smoke package is standard-library only, and the build plans come
# from the pack when the CMake model (tree-sitter) is not importable here. The wheels in pack/wheels
# (fetch_wheels.sh: executorch 1.5.1, whose flatc generates the schema headers and whose exporter writes
# the .pte/.ptd, with torchao, pytorch-tokenizers and small pure-Python deps) are installed with
# `pip install --no-index --no-deps --target` into the work directory first.
#
#   OUT=/some/dir smoke/device/run_on_h200.sh [main] [regressions] [history]    (default: all three)
#
# Each group fits one 10-minute call on 16 cores: main (cold; then, when ccache is installed, again in a
# fresh build directory that the warm cache serves), the five regressions against main's report, and the history pair
# eac0673bd5 / 3a00cc1897 each against its parent. The work directory (smoke/device/work, git-ignored)
# survives between calls on a warm machine, so `regressions` finds main's report from an earlier call.
# Writes two files under $OUT (the copy-back takes few files): summary.txt (doctor, then per case its
# exit, wall time and stage lines) and results.tar.gz (per case <case>.json report and <case>.log, each
# regression's <case>.regression.json, doctor.txt). Prints the summary.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PACK=${PACK:-$REPO/smoke/device/pack}
OUT=${OUT:?set OUT to the directory that comes back}
PYTHON=${PYTHON:-python3}
WORK=${WORK:-$REPO/smoke/device/work}
CASES=${*:-main regressions history}
ARCH=${CUDA_ARCH:-native}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
RESULTS=$(mktemp -d)
# Whatever happens below, what was written so far comes back as one archive.
trap 'tar -czf "$OUT/results.tar.gz" -C "$RESULTS" . && rm -rf "$RESULTS"' EXIT
trap 'exit 143' TERM INT  # so that `timeout` still leaves the archive
cd "$REPO"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$WORK"
[ -f "$WORK/commit.txt" ] || tar -xzf "$PACK/trees.tar.gz" -C "$WORK"
if [ -n "${PLANS:-}" ]; then
  :             # chosen by the caller: model or pack
elif "$PYTHON" -c "import tree_sitter, tree_sitter_cmake" 2>/dev/null; then
  PLANS=model   # plan from the CMake model here, as in CI
else
  PLANS=pack    # the plans pack_tree.sh wrote with the same model
fi
echo "commit $(cat "$WORK/commit.txt"); plans from the $PLANS; $JOBS jobs; nvcc -arch=$ARCH; work $WORK" | tee "$OUT/summary.txt"
"$PYTHON" -m smoke doctor > "$RESULTS/doctor.txt" 2>&1; tee -a "$OUT/summary.txt" < "$RESULTS/doctor.txt"
if [ -d "$PACK/wheels" ] && ! "$PYTHON" -c "import importlib.util as u; assert u.find_spec('executorch')" 2>/dev/null; then
  started=$SECONDS
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
    "$PACK"/wheels/*.whl > "$RESULTS/pip.log" 2>&1 || echo "pip install failed: see pip.log" | tee -a "$OUT/summary.txt"
  echo "wheels installed in $((SECONDS - started))s" | tee -a "$OUT/summary.txt"
fi
[ -d "$WORK/site" ] && export PYTHONPATH="$PYTHONPATH:$WORK/site"

plan() {  # case -> the --head-plan/--base-plan arguments when the plans come from the pack
  [ "$PLANS" = pack ] && echo "--$2-plan $WORK/$1/plan.json"
}

smoke() {  # case [arguments...]: one `smoke run` of the backend stages at that tree
  local name=$1; shift
  local started=$SECONDS
  # shellcheck disable=SC2046
  "$PYTHON" -m smoke run --backend-only --require-gpu --tree "$WORK/$name/executorch" $(plan "$name" head) \
    --build-dir "$WORK/build/$name" --wrapper-dir "$WORK/standalone-canary" --cuda-arch "$ARCH" --jobs "$JOBS" \
    --report "$WORK/$name.json" "$@" > "$RESULTS/$name.log" 2>&1
  local code=$?
  cp "$WORK/$name.json" "$RESULTS/$name.json" 2>/dev/null
  echo "== $name: exit $code, $((SECONDS - started))s wall" | tee -a "$OUT/summary.txt"
  grep -v "^report:" "$RESULTS/$name.log" | tee -a "$OUT/summary.txt"
}

# 1. The real commit, cold (the standalone canary is compiled here once and reused below); then the
#    same tree in a fresh build directory, which a warm ccache serves when one is installed.
if [[ " $CASES " == *" main "* ]]; then
  rm -rf "$WORK/build/main" "$WORK/build/main-again"
  smoke main
  if command -v ccache >/dev/null; then  # without ccache a second build measures nothing new
    ln -sfn "$WORK/main" "$WORK/main-again"
    smoke main-again
  fi
fi

# 2. The five regressions, each against main's report (base is not rebuilt; the program is exported once
#    per distinct backend Python, so they reuse main's).
if [[ " $CASES " == *" regressions "* ]]; then
  [ -f "$WORK/main.json" ] || smoke main
  for regression in ${REGRESSIONS:-tensor-attribute sort-wrong-index no-whole-archive static-shim cu-syntax-error}; do
    cp "$WORK/$regression/regression.json" "$RESULTS/$regression.regression.json"
    smoke "$regression" --base-report "$WORK/main.json" --diff "$WORK/$regression/pr.diff"
  done
fi

# 3. The real history pair, each against its parent.
if [[ " $CASES " == *" history "* ]]; then
  for commit in eac0673bd5 3a00cc1897; do
    # shellcheck disable=SC2046
    smoke "$commit" --base-tree "$WORK/$commit-parent/executorch" $(plan "$commit-parent" base) \
      --diff "$WORK/$commit/pr.diff"
  done
fi
echo "all cases: ${SECONDS}s wall on $(nproc) CPUs" | tee -a "$OUT/summary.txt"
echo "summary in $OUT/summary.txt; reports and logs in $OUT/results.tar.gz"
