#!/usr/bin/env bash
# Rehearses, here (no GPU), the cases a device call will run: every stage but the export and the runs,
# from the same pack, so the call does not die on a missing header or a typo. The schema stage uses the
# flatc the executorch wheel ships (unzipped, not installed); objects are cached in WORK/cache as on the
# GPU machine. Without a GPU each run ends neutral (exit 77) or failed, never passed.
#
#   smoke/device/rehearse_cpu.sh PACK CASE...      # CASE: main | a planted case | pr:<case> (head vs its base)
#   WORK=/tmp/smoke-rehearsal JOBS=2 ...           # defaults
set -uo pipefail
PACK=$(cd "${1:?PACK (holding trees.tar.gz and wheels/)}" && pwd); shift
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/smoke-rehearsal}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
mkdir -p "$WORK/flatc" "$WORK/results"
[ -f "$WORK/trees/commit.txt" ] || { mkdir -p "$WORK/trees" && tar -xzf "$PACK/trees.tar.gz" -C "$WORK/trees"; }
[ -x "$WORK/flatc/executorch/data/bin/flatc" ] || unzip -o -q "$PACK"/wheels/executorch-*.whl 'executorch/data/bin/flatc' -d "$WORK/flatc"
chmod +x "$WORK/flatc/executorch/data/bin/flatc"
export SMOKE_FLATC=$WORK/flatc/executorch/data/bin/flatc
cd "$REPO"  # python -m puts the working directory first on sys.path: this smoke/, not another checkout's
T=$WORK/trees
one() {  # name tree [arguments...]
  local name=$1 tree=$2; shift 2
  local started=$SECONDS
  "$PYTHON" -m smoke run --backend-only --tree "$T/$tree/executorch" --head-plan "$T/$tree/plan.json" \
    --build-dir "$WORK/build/$name" --cache-dir "$WORK/cache" --jobs "${JOBS:-2}" --report "$WORK/results/$name.json" \
    "$@" > "$WORK/results/$name.log" 2>&1
  echo "== $name: exit $?, $((SECONDS - started))s wall" | tee -a "$WORK/results/summary.txt"
}
for item in "$@"; do
  case $item in
    main) one main main ;;
    pr:*) c=${item#pr:}; one "$c" "$c" --base-tree "$T/$c-base/executorch" --base-plan "$T/$c-base/plan.json" --diff "$T/$c/pr.diff" ;;
    *) one "$item" "$item" --base-report "$WORK/results/main.json" --diff "$T/$item/pr.diff" ;;
  esac
done
