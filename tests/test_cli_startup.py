"""Start-up: `pr-check --version` and `--help` import only what they print.

The App's stack (FastAPI, Huey, Redis, PyGithub), the smoke runner, the checks, the evaluators
and the renderers are imported by the commands that use them. Each case runs the real entry
point in a fresh interpreter and reads its `sys.modules`; how long start-up takes is a figure
in bench/ (bench/busy_day.py times whole-process `--version` runs), not an assert here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Top-level packages a version or help line must not pull in, with why each is heavy.
HEAVY = {
    "fastapi": "the App's HTTP edge",
    "starlette": "the App's HTTP edge",
    "pydantic": "the App's HTTP edge",
    "huey": "the App's queue",
    "redis": "the App's queue",
    "github": "PyGithub, the App's client",
    "webhooks": "the App",
    "smoke": "the GPU smoke runner",
    "checks": "the rules",
    "starlark": "the Buck evaluator",
    "tree_sitter": "the syntax layer",
    "rich": "the progress bar",
}

_PROBE = """
import json, sys
from pr_check.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as stop:
    status = stop.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules_after(*argv: str) -> tuple[int, set[str]]:
    status, modules = _all_modules_after(*argv)
    return status, {name.split(".")[0] for name in modules}


def _all_modules_after(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    record = json.loads(done.stderr.strip().splitlines()[-1])
    return record["status"], set(record["modules"])


@pytest.mark.parametrize(
    "argv",
    [("--version",), ("--help",), ("review", "--help"), ("scan", "--help"), ("fix", "--help")],
    ids=lambda argv: " ".join(argv),
)
def test_version_and_help_import_none_of_the_heavy_stacks(argv: tuple[str, ...]) -> None:
    status, loaded = _modules_after(*argv)
    assert status == 0
    assert {name: HEAVY[name] for name in loaded & HEAVY.keys()} == {}


def test_a_review_command_does_import_the_checks_it_runs() -> None:
    """The probe sees imports at all: `rules` needs the checks and loads them (and no App)."""
    status, loaded = _modules_after("rules")
    assert status == 0
    assert "checks" in loaded
    assert loaded & {"fastapi", "huey", "redis", "github", "webhooks", "smoke"} == set()


# What a review served whole from the store has no use for: the checks and everything that evaluates
# a build. A warm review is a key, one stored read and a render (bench/cold_pairs.py --warm times it).
EVALUATING = {
    "checks": "the rules",
    "starlark": "the Buck evaluator",
    "bot.engine": "the check engine",
    "bot.snapshot": "the build models",
    "bot.buck.evaluation": "the Buck evaluator",
    "bot.cmake.interpreter": "the CMake interpreter",
    "bot.facts.revision": "facts of a revision",
}


def test_a_review_served_from_the_store_imports_no_check_and_no_evaluator(case_repo, tmp_path) -> None:
    repo, base, head = case_repo("clean-cpu-target")
    argv = ("review", "--repo", str(repo), "--base", base, "--head", head, "--cache-dir", str(tmp_path / "store"))
    argv += ("--no-compile", "--format", "json", "--exit-zero")
    status, first = _all_modules_after(*argv)
    assert status == 0 and "checks" in first  # the first review runs the checks
    status, served = _all_modules_after(*argv)
    assert status == 0
    assert {name: why for name, why in EVALUATING.items() if name in served} == {}
