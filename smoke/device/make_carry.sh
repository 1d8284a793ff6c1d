#!/usr/bin/env bash
# Assembles, here, the one folder a device call carries to the GPU machine: this smoke/ package, the
# wheels (fetch_wheels.sh) and the cases (pack_cases.sh), at CHECKOUT/.smoke_carry, ignored through
# CHECKOUT's .git/info/exclude (the device tool sends the session's checkout, not a helper's worktree).
# About 38 MB, under the 64 MiB a call carries with the checkout itself.
#
#   smoke/device/make_carry.sh CHECKOUT [PR_NUMBER | COMMIT ...]
#
# Default cases: the planted regressions and quiet edits run_cases.sh's new and quiet groups run, and the
# main-history merges of #20498 (d54a0c0a50) and #20241 (182be0e26e), each against its parent.
# Then, in one device call from CHECKOUT's root (see docs/smoke.md, "Running it on a GPU machine"):
#   export PYTHONPATH=$PWD; cd .smoke_carry && OUT=$OUT timeout -s TERM 570 bash smoke/device/run_cases.sh main new quiet prs
set -euo pipefail
CHECKOUT=$(cd "${1:?CHECKOUT (the session checkout the device tool sends)}" && pwd); shift
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CARRY=$CHECKOUT/.smoke_carry
ITEMS=("$@")
[ ${#ITEMS[@]} -gt 0 ] || ITEMS=(d54a0c0a50 182be0e26e)
GIT_DIR=$(git -C "$CHECKOUT" rev-parse --git-common-dir)
case $GIT_DIR in /*) ;; *) GIT_DIR=$CHECKOUT/$GIT_DIR ;; esac
mkdir -p "$GIT_DIR/info" "$CARRY/pack"
grep -qx '/.smoke_carry/' "$GIT_DIR/info/exclude" 2>/dev/null || echo '/.smoke_carry/' >> "$GIT_DIR/info/exclude"
rm -rf "$CARRY/smoke"
rsync -a --exclude reports --exclude __pycache__ --exclude device/pack "$REPO/smoke" "$CARRY/"
ls "$CARRY"/pack/wheels/executorch-*.whl >/dev/null 2>&1 || "$HERE/fetch_wheels.sh" "$CARRY/pack/wheels"
CASES=${CASES:-"empty-strided-check stream-guard-device int4mm-group sort-wrong-index sdpa-scale drop-cuda-guard hidden-visibility quiet-sort-comment quiet-memory-rename quiet-cmake-reorder"} \
  "$HERE/pack_cases.sh" "$CARRY/pack" "${ITEMS[@]}"
du -sh "$CARRY"
