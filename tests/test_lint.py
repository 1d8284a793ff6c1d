"""The rot detectors in the test run, so CI runs them: ruff's lint and format check and pyright in
standard mode, configured in pyproject.toml, each with zero findings. `make lint` runs the same three.

The tools are taken from the interpreter's own environment (the venv `make test` builds); a machine
without them (a bare interpreter, or a pyright whose Node.js download cannot run offline) skips, saying
which. Pyright takes about 40 s of one core over the product packages, ruff well under a second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable} (pip install -e '.[test]')")
    return path


def _run(*command: str | Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_ruff_check_finds_nothing():
    done = _run(_tool("ruff"), "check", "--no-cache", "--output-format", "concise", ".", timeout=120)
    assert done.returncode == 0, f"ruff check:\n{done.stdout}{done.stderr}"


def test_ruff_format_would_change_nothing():
    done = _run(_tool("ruff"), "format", "--check", "--no-cache", ".", timeout=120)
    assert done.returncode == 0, f"ruff format --check (run `ruff format .`):\n{done.stdout}{done.stderr}"


def test_pyright_finds_nothing():
    pyright = _tool("pyright")
    probe = _run(pyright, "--version", timeout=300)
    if probe.returncode != 0:  # pyright-python fetches its Node.js package on first use
        pytest.skip(f"pyright cannot start here: {(probe.stdout + probe.stderr).strip()[-300:]}")
    # --pythonpath: resolve imports in this interpreter's environment, wherever the venv lies.
    done = _run(pyright, "--pythonpath", sys.executable, timeout=600)
    assert done.returncode == 0, f"pyright:\n{done.stdout[-20000:]}{done.stderr[-2000:]}"
