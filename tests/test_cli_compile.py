"""`--compile/--no-compile` on `review` and `scan`: the compiled tier's findings come and go with it,
and the text output says which state the tier was in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.toolchain.runner import discover

ROOT = Path(__file__).resolve().parents[1]
CASE = "compiled-cuda-call-outside-ifdef"  # sync.cpp names cudaError_t outside its #ifdef


def pr_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


@pytest.mark.skipif(discover() is None, reason="no C++ compiler on this machine")
def test_compile_reports_the_compiler_error_and_no_compile_does_not(case_repo, tmp_path):
    repo, base, head = case_repo(CASE)
    common = ("review", "--repo", str(repo), "--base", base, "--head", head, "--exit-zero")
    on = pr_check(*common, "--compile", "--cache-dir", str(tmp_path / "on"))
    assert on.returncode == 0, on.stderr
    assert "compile-error-new" in on.stdout
    assert "'cudaError_t' was not declared in this scope" in on.stdout
    assert "compiled tier: on (" in on.stdout

    off = pr_check(*common, "--no-compile", "--cache-dir", str(tmp_path / "off"))
    assert off.returncode == 0, off.stderr
    assert "compile-error-new" not in off.stdout
    assert "compiled tier: off (--no-compile)" in off.stdout


def test_scan_takes_no_compile_and_says_so(case_repo, tmp_path):
    repo, _, head = case_repo(CASE)
    result = pr_check("scan", "--repo", str(repo), "--rev", head, "--exit-zero", "--no-compile")
    assert result.returncode == 0, result.stderr
    assert "compiled tier: off (--no-compile)" in result.stdout
    assert "compile-error-new" not in result.stdout


def test_compile_and_no_compile_are_one_option_in_the_help():
    result = pr_check("review", "--help")
    assert result.returncode == 0
    assert "--compile, --no-compile" in result.stdout
