#!/usr/bin/env bash
# The smoke cases on a GPU machine with nvcc, g++ and PyTorch (CUDA) but no network, from the folder
# holding smoke/ and pack/ (pack/wheels from fetch_wheels.sh, pack/trees.tar.gz from pack_cases.sh).
#
#   OUT=/dir/that/comes/back smoke/device/run_cases.sh GROUP...
#
# Groups, in the order given: main (the mirror's main with every catalogue program, cold with an empty
# cache, then again warm in a fresh build directory), new (the planted regressions empty-strided-check,
# stream-guard-device, int4mm-group, sort-wrong-index, sdpa-scale, drop-cuda-guard, hidden-visibility:
# two .cpp shims failing at run time, two .cu kernels and the SDPA Triton kernel giving wrong values, two
# CMake lines losing exports), quiet (the three quiet edits),
# old (no-whole-archive, static-shim, cu-syntax-error, tensor-attribute), prs (every real pull request or
# commit in the pack, head against its merge base or parent, both built). Each regression and quiet edit runs against main's
# report with the object and program cache main filled: the run a pull request touching one file gets.
# The work directory survives between calls on a warm machine. Writes $OUT/summary.txt and
# $OUT/results.tar.gz (a JSON report and log per case).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:?set OUT to the directory that comes back}
WORK=${WORK:-/tmp/smoke-work}
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
# CUDA_ARCH=default leaves the architecture to nvcc (a rehearsal without a GPU, where native has none).
ARCH=(--cuda-arch "${CUDA_ARCH:-native}")
[ "${CUDA_ARCH:-native}" != default ] || ARCH=()
mkdir -p "$OUT" "$WORK/results"
# A timeout's SIGTERM still writes what finished; the archive is also refreshed after every case.
trap 'tar -czf "$OUT/results.tar.gz" -C "$WORK/results" .' EXIT
trap 'exit 143' TERM
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -f "$WORK/commit.txt" ] || tar -xzf pack/trees.tar.gz -C "$WORK"
if [ ! -d "$WORK/site" ]; then
  started=$SECONDS
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" pack/wheels/*.whl \
    > "$WORK/results/pip.log" 2>&1 || echo "pip install failed: see pip.log" | tee -a "$OUT/summary.txt"
  echo "wheels installed in $((SECONDS - started))s" | tee -a "$OUT/summary.txt"
fi
export PYTHONPATH="$PYTHONPATH:$WORK/site"
echo "commit $(cat "$WORK/commit.txt"); $JOBS jobs; $(nproc) CPUs" | tee -a "$OUT/summary.txt"
[ -f "$WORK/results/doctor.txt" ] || "$PYTHON" -m smoke doctor > "$WORK/results/doctor.txt" 2>&1
head -12 "$WORK/results/doctor.txt" >> "$OUT/summary.txt"

smoke() {  # name tree-case [arguments...]
  local name=$1 tree=$2; shift 2
  local started=$SECONDS
  "$PYTHON" -m smoke run --backend-only --require-gpu --tree "$WORK/$tree/executorch" \
    --head-plan "$WORK/$tree/plan.json" --build-dir "$WORK/build/$name" --cache-dir "$WORK/cache" \
    "${ARCH[@]}" --jobs "$JOBS" --report "$WORK/results/$name.json" "$@" > "$WORK/results/$name.log" 2>&1
  local code=$?
  echo "== $name: exit $code, $((SECONDS - started))s wall" | tee -a "$OUT/summary.txt"
  grep -v "^report:" "$WORK/results/$name.log" | cut -c1-900 | tee -a "$OUT/summary.txt"
  tar -czf "$OUT/results.tar.gz" -C "$WORK/results" .
}

against_main() {  # case
  cp "$WORK/$1/regression.json" "$WORK/results/$1.regression.json"
  smoke "$1" "$1" --base-report "$WORK/results/main.json" --diff "$WORK/$1/pr.diff"
}

for group in "$@"; do
  case $group in
    main)
      # KEEP_CACHE=1 (a re-run on a warm machine, a rehearsal with a filled cache): main is not cold.
      [ "${KEEP_CACHE:-0}" = 1 ] || rm -rf "$WORK/cache"
      rm -rf "$WORK/build/main" "$WORK/build/main-warm"
      smoke main main --programs sort,tensor,int4mm,sdpa
      smoke main-warm main --programs sort,tensor,int4mm,sdpa ;;
    new)
      for name in empty-strided-check stream-guard-device int4mm-group sort-wrong-index sdpa-scale drop-cuda-guard \
        hidden-visibility; do against_main "$name"; done ;;
    quiet) for name in quiet-sort-comment quiet-memory-rename quiet-cmake-reorder; do against_main "$name"; done ;;
    old) for name in no-whole-archive static-shim cu-syntax-error tensor-attribute; do against_main "$name"; done ;;
    prs)
      for pull in "$WORK"/pr*/pull.json "$WORK"/commit-*/pull.json; do
        [ -f "$pull" ] || continue  # a pattern that matched nothing
        name=$(basename "$(dirname "$pull")")
        cp "$pull" "$WORK/results/$name.pull.json"
        smoke "$name" "$name" --base-tree "$WORK/$name-base/executorch" --base-plan "$WORK/$name-base/plan.json" \
          --diff "$WORK/$name/pr.diff"
      done ;;
  esac
done
echo "all: ${SECONDS}s wall" | tee -a "$OUT/summary.txt"
