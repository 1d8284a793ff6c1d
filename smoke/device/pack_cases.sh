#!/usr/bin/env bash
# Prepares, here (where the ExecuTorch mirror and pr-check's CMake model are), every case run_cases.sh
# runs on the GPU machine: the CUDA backend's subtree at the mirror's main, one copy per planted
# regression and quiet edit of smoke/regressions.py with its diff and regression.json, and for each
# real pull request named (refs/pull/N/head) its head and merge base with their diff; a build plan per
# tree from the CMake model (the GPU machine has no tree-sitter). Writes PACK/trees.tar.gz.
#
#   smoke/device/pack_cases.sh PACK [PR_NUMBER | COMMIT ...]       # MIRROR=... to use another mirror
set -euo pipefail
PACK=${1:?PACK directory}; shift
MIRROR=${MIRROR:-/work/.mirror/pytorch+executorch/repo}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cd "$REPO"

plan() {  # case
  "$PYTHON" -m smoke plan --tree "$STAGE/$1/executorch" --out "$STAGE/$1/plan.json" >/dev/null
}
extract() {  # case revision
  "$PYTHON" -m smoke.regressions extract "$MIRROR" "$2" "$STAGE/$1" >/dev/null
  # A tree that pins the flatbuffers submodule needs its headers, or the runtime host is not built
  # and no program runs through CudaBackend::execute: every case ends neutral, and a device call
  # (scarce: minutes a session) is spent on the build stages alone. Stop here instead.
  if git -C "$MIRROR" ls-tree "$2" -- third-party/flatbuffers | grep -q ' commit ' \
      && [ ! -f "$STAGE/$1/executorch/third-party/flatbuffers/include/flatbuffers/flatbuffers.h" ] \
      && [ "${SMOKE_ALLOW_NO_FLATBUFFERS:-0}" != 1 ]; then
    echo "pack_cases: $1 ($2) pins third-party/flatbuffers, but its headers could not be packed: fetch" \
      "google/flatbuffers to ${SMOKE_FLATBUFFERS_MIRROR:-/work/.mirror/google+flatbuffers/repo} (SMOKE_FLATBUFFERS_MIRROR" \
      "names another), or SMOKE_ALLOW_NO_FLATBUFFERS=1 to pack the build stages only" >&2
    exit 1
  fi
  plan "$1"
}

git -C "$MIRROR" rev-parse --verify "refs/heads/main^{commit}" > "$STAGE/commit.txt" 2>/dev/null
extract main "$(cat "$STAGE/commit.txt")"
# CASES="name ..." packs only those planted cases (default: every regression and quiet edit).
CASES=${CASES:-$("$PYTHON" -c "from smoke.regressions import REGRESSIONS, QUIET; print(' '.join([*REGRESSIONS, *QUIET]))")}
for name in $CASES; do
  mkdir -p "$STAGE/$name"
  cp -r "$STAGE/main/executorch" "$STAGE/$name/executorch"
  "$PYTHON" -m smoke.regressions apply "$name" "$STAGE/$name/executorch" > "$STAGE/$name/regression.json"
  plan "$name"
  "$PYTHON" -m smoke.regressions diff "$STAGE/main/executorch" "$STAGE/$name/executorch" > "$STAGE/$name/pr.diff"
done
for item in "$@"; do  # a pull request's number (its head against the merge base) or a main commit (against its parent)
  if [[ $item =~ ^[0-9]+$ ]]; then
    name=pr$item
    head=$(git -C "$MIRROR" rev-parse "refs/pull/$item/head" 2>/dev/null)
    base=$(git -C "$MIRROR" merge-base "$head" refs/heads/main 2>/dev/null)
  else
    name=commit-$item
    head=$(git -C "$MIRROR" rev-parse "$item^{commit}" 2>/dev/null)
    base=$(git -C "$MIRROR" rev-parse "$item^" 2>/dev/null)
  fi
  extract "$name" "$head"
  extract "$name-base" "$base"
  git -C "$MIRROR" diff "$base" "$head" > "$STAGE/$name/pr.diff" 2>/dev/null
  echo "{\"case\": \"$name\", \"head\": \"$head\", \"base\": \"$base\"}" > "$STAGE/$name/pull.json"
done
mkdir -p "$PACK"
tar -czf "$PACK/trees.tar.gz" -C "$STAGE" .
ls -la "$PACK"
