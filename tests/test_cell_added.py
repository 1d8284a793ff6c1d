"""A cell is one row: the README's "Add a cell" followed on a copy of this checkout.

The copy gets a fourth row in `bot/buck/cells.py` (the `xplat` row with another name and build
files named `BUCK.v2`) and `python -m pr_check.generated`; nothing else changes. A pull request
that adds a CUDA library in a `BUCK.v2` file must then be reviewed in the new cell (the guard rule
fires there, as in any CPU-only cell) and the JSON must still match its schema; in this checkout,
without the row, nothing reads `BUCK.v2`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from fixtures.cases import git, init_base_repository
from pr_check.generated import FILES, SCHEMA_PATH
from tests.packaging import ROOT, copy_tracked_tree

NEW_CELL = "v2"
BUCK_V2 = """load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")

runtime.cxx_library(
    name = "kernels",
    srcs = ["kernels.cu"],
    visibility = ["PUBLIC"],
)
"""


def _add_row(cells_py: Path) -> None:
    """Append a copy of the `xplat` row, renamed and reading `BUCK.v2`, to CELL_TABLE (text edit)."""
    text = cells_py.read_text()
    row = re.search(r"\n    Cell\(\n        name=\"xplat\",.*?\n    \),\n", text, re.S)
    assert row, "bot/buck/cells.py: the xplat row"
    new = row.group(0).replace('name="xplat"', f'name="{NEW_CELL}"')
    new, count = re.subn(r"build_file_names=\([^)]*\)", 'build_file_names=("BUCK.v2",)', new)
    assert count == 1
    table_end = text.index("\n)\n", text.index("CELL_TABLE: tuple"))
    cells_py.write_text(text[:table_end] + new.rstrip("\n") + text[table_end:])


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory) -> tuple[Path, str, str]:
    repo, base = init_base_repository(tmp_path_factory.mktemp("cell-pr"))
    package = repo / "backends" / "v2gpu"
    package.mkdir(parents=True)
    (package / "BUCK.v2").write_text(BUCK_V2)
    (package / "kernels.cu").write_text("__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a CUDA library in a BUCK.v2 file")
    return repo, base, git(repo, "rev-parse", "HEAD")


def _review(code: Path, pull: tuple[Path, str, str], cache: Path) -> dict:
    repo, base, head = pull
    env = {**os.environ, "PYTHONPATH": str(code)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pr_check.cli",
            "review",
            "--repo",
            str(repo),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "json",
            "--cache-dir",
            str(cache),
        ],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_without_the_row_no_cell_reads_buck_v2(pull_request, tmp_path):
    document = _review(ROOT, pull_request, tmp_path / "cache")
    assert [f for f in document["findings"] if f["path"].endswith("BUCK.v2")] == []


def test_a_new_row_is_a_new_cell_everywhere(pull_request, tmp_path):
    code = copy_tracked_tree(tmp_path / "code")
    _add_row(code / "bot" / "buck" / "cells.py")
    subprocess.run(
        [sys.executable, "-m", "pr_check.generated", str(code)],
        cwd=code,
        check=True,
        env={**os.environ, "PYTHONPATH": str(code)},
    )
    changed = [str(path) for path in FILES if (code / path).read_text() != (ROOT / path).read_text()]
    assert changed == ["README.md", str(SCHEMA_PATH)]  # the schema's cell list follows the table
    # and so does the configuration reference: the new cell is CPU-only, like the row it copied.
    assert (
        f'| `[buck]` `cpu_only_cells` | list of strings | `["xplat", "{NEW_CELL}"]` |'
        in (code / "README.md").read_text()
    )

    document = _review(code, pull_request, tmp_path / "cache")
    jsonschema.validate(document, json.loads((code / SCHEMA_PATH).read_text()))
    guard = [f for f in document["findings"] if f["rule"] == "cuda-guard-missing"]
    assert [(f["path"], f["line"], f["cell"], f["target"]) for f in guard] == [
        ("backends/v2gpu/BUCK.v2", 3, NEW_CELL, "//backends/v2gpu:kernels")
    ]
    # The smoke decision names the new cell too (it is a CUDA target that changed).
    assert any(f"`{NEW_CELL}` cell" in reason for reason in document["smoke"]["reasons"])
