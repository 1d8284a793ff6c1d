"""Text output as linter users pipe it: goldens written by hand, and the real process piped."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from dataclasses import replace
from pathlib import Path

from bot.render.text import QUIET, VERBOSE, TextOptions, render_text
from bot.smoke_decision import SmokeDecision
from tests.reports import CRASH, GUARD, LONG, MINOR, report

ROOT = Path(__file__).resolve().parents[1]

REVIEW_GOLDEN = f"""\
pr-check review 111111111111..222222222222: 2 files changed

BLOCKER  cuda-guard-missing  backends/cuda/targets.bzl:100
  target: //backends/cuda/runtime:runtime_shims (cell xplat)
  {LONG}
  evidence: backends/cuda/targets.bzl:100: `cuda` is a CUDA external dep
  fix: backends/cuda/targets.bzl:101: add the constraint
            compatible_with = ["ovr_config//cuda:has_cuda"],

MINOR    link-whole-without-python-dlopen  extension/pybindings/targets.bzl:7
  target: //extension/pybindings:x (cell fbcode)
  link_whole without the dlopen flags

Summary: 1 blocker, 1 minor
GPU smoke job: required
  - a.cu: CUDA source changed
"""


def test_review_text_golden():
    smoke = SmokeDecision(True, ("a.cu: CUDA source changed",))
    assert render_text(report([GUARD, MINOR], smoke=smoke, files=2)) == REVIEW_GOLDEN


def test_quiet_is_one_line_per_finding():
    text = render_text(report([GUARD, MINOR, CRASH]), TextOptions(verbosity=QUIET))
    assert text == (
        f"backends/cuda/targets.bzl:100: blocker cuda-guard-missing: {LONG}\n"
        "extension/pybindings/targets.bzl:7: minor link-whole-without-python-dlopen: link_whole without the dlopen flags\n"
        "(no file): major internal-error: check `source-parity` raised KeyError: 'x'\n"
    )


def test_verbose_lists_suppressions_smoke_and_checks():
    suppressed = replace(GUARD, suppressed="Jetson only")
    text = render_text(report([MINOR], suppressed=[suppressed]), TextOptions(verbosity=VERBOSE))
    assert (
        text
        == """\
pr-check review 111111111111..222222222222: 1 file changed

MINOR    link-whole-without-python-dlopen  extension/pybindings/targets.bzl:7
  target: //extension/pybindings:x (cell fbcode)
  link_whole without the dlopen flags

1 finding suppressed with @lint-ignore.
  backends/cuda/targets.bzl:100: cuda-guard-missing: Jetson only
Summary: 1 minor
GPU smoke job: not required
Checks run: cuda-guard-missing
Time: 0.5 s
"""
    )


def test_scan_statistics_golden():
    scan = report([GUARD, MINOR, CRASH], base="", files=0)
    text = render_text(scan, TextOptions(statistics=True, notes=("revision: refs/heads/main",)))
    assert (
        text
        == """\
pr-check scan 222222222222: the whole tree, 3 findings
revision: refs/heads/main

Findings by rule:
  1  blocker  cuda-guard-missing
  1  major    internal-error
  1  minor    link-whole-without-python-dlopen

Findings by cell:
  1  (no cell)
  1  fbcode
  1  xplat

Findings by directory:
  1  (no path)
  1  backends/cuda
  1  extension/pybindings

Summary: 1 blocker, 1 major, 1 minor
"""
    )


def test_smoke_reasons_are_capped_unless_verbose():
    smoke = SmokeDecision(True, tuple(f"r{n}" for n in range(12)))
    normal = render_text(report([], smoke=smoke))
    assert "  - r9\n  ... and 2 more (-v shows all)\n" in normal and "r10" not in normal
    assert "  - r11\n" in render_text(report([], smoke=smoke), TextOptions(verbosity=VERBOSE))


def test_color_only_when_asked():
    assert "\033[" not in render_text(report([GUARD]))
    assert "\033[1;31mBLOCKER \033[0m cuda-guard-missing" in render_text(report([GUARD]), TextOptions(color=True))


def _piped(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "40", "TERM": "xterm-256color"},
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_piped_review_is_unwrapped_plain_and_stable(case_repo):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    args = ("review", "--repo", str(repo), "--base", base, "--head", head)
    text = _piped(*args, "-v")
    lines = text.splitlines()
    assert text.endswith("\n") and all(line == line.rstrip() for line in lines)
    assert "\033[" not in text
    assert not any(unicodedata.category(ch) == "So" for ch in text)  # no emoji or other symbols
    document = json.loads(_piped(*args, "--format", "json"))
    for finding in document["findings"]:
        assert f"  {finding['message']}" in lines  # the whole message on one line, COLUMNS notwithstanding
        assert any(line.endswith(f"  {finding['path']}:{finding['line']}") for line in lines)
    assert _piped(*args) == _piped(*args)  # stable: nothing in the default output varies between runs
