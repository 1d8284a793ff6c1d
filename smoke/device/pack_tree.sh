#!/usr/bin/env bash
# Prepares what the H200 run needs, on a machine with the ExecuTorch mirror and pr-check installed:
# the CUDA backend's subtree at the real commits and at each regression (with the third-party/flatbuffers
# headers at the commit the tree pins, from a google/flatbuffers mirror: SMOKE_FLATBUFFERS_MIRROR), the
# unified diffs, and a build plan per tree written by the CMake model here (the GPU machine may lack
# tree-sitter). The wheels come from fetch_wheels.sh (pack/wheels). No make needed.
#
#   smoke/device/fetch_wheels.sh                     # once: pack/wheels (~24 MB, pip download)
#   smoke/device/pack_tree.sh [MIRROR] [COMMIT]      # writes smoke/device/pack/trees.tar.gz (~10 MB)
#
# Then carry smoke/device/pack to the GPU machine and run smoke/device/run_on_h200.sh there.
set -euo pipefail
MIRROR=${1:-/work/.mirror/pytorch+executorch/repo}
COMMIT=${2:-refs/heads/main}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
PACK=$HERE/pack
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cd "$REPO"

extract() {  # name revision
  "$PYTHON" -m smoke.regressions extract "$MIRROR" "$2" "$STAGE/$1" >/dev/null
  "$PYTHON" -m smoke plan --tree "$STAGE/$1/executorch" --out "$STAGE/$1/plan.json" >/dev/null
}

git -C "$MIRROR" rev-parse --verify "$COMMIT^{commit}" > "$STAGE/commit.txt"
extract main "$(cat "$STAGE/commit.txt")"
for regression in no-whole-archive static-shim cu-syntax-error tensor-attribute sort-wrong-index; do
  mkdir -p "$STAGE/$regression"
  cp -r "$STAGE/main/executorch" "$STAGE/$regression/executorch"
  "$PYTHON" -m smoke.regressions apply "$regression" "$STAGE/$regression/executorch" > "$STAGE/$regression/regression.json"
  "$PYTHON" -m smoke plan --tree "$STAGE/$regression/executorch" --out "$STAGE/$regression/plan.json" >/dev/null
  "$PYTHON" -m smoke.regressions diff "$STAGE/main/executorch" "$STAGE/$regression/executorch" > "$STAGE/$regression/pr.diff"
done
# The real history: eac0673bd5 linked the archive whole in PUBLIC scope; 3a00cc1897 made it PRIVATE.
for commit in eac0673bd5 3a00cc1897; do
  extract "$commit-parent" "$commit^"
  extract "$commit" "$commit"
  git -C "$MIRROR" diff "$commit^" "$commit" -- backends extension tools CMakeLists.txt > "$STAGE/$commit/pr.diff"
done
mkdir -p "$PACK"
tar -czf "$PACK/trees.tar.gz" -C "$STAGE" .
ls -la "$PACK"
