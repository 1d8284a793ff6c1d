#!/usr/bin/env bash
# Downloads, here (where pip reaches an index), the wheels the GPU machine needs to export a program
# with ExecuTorch's CUDA backend on its own PyTorch 2.11: the executorch 1.5.1 wheel (which also ships
# executorch/data/bin/flatc, the schema compiler the runtime path uses), torchao and pytorch-tokenizers
# it imports, and the small pure-Python packages it imports that the GPU machine's image lacks. About
# 24 MB. They stay out of git (smoke/device/.gitignore); run_on_h200.sh installs them there with
# `pip install --no-index --no-deps --target`.
#
#   smoke/device/fetch_wheels.sh [DIR]      # default smoke/device/pack/wheels
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-$HERE/pack/wheels}
mkdir -p "$DIR"
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${PLATFORMS[@]}" -d "$DIR" executorch==1.5.1 torchao==0.18.0 pytorch-tokenizers==1.5.0 \
  expecttest==0.3.0 kgb==7.3 parameterized==0.9.0 ruamel.yaml==0.19.1
ls -la "$DIR"
