"""A hostile BUCK file is a finding, never a crash, and hides nothing else the review finds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.buck.syntax import MAX_BRACKET_DEPTH, bracket_depth
from fixtures.cases import git

ROOT = Path(__file__).resolve().parent.parent
DEEP = "deep = " + "[" * 5000 + "]" * 5000 + "\n"


def test_bracket_depth_ignores_strings_and_comments():
    assert bracket_depth('a = ["(", "[[[", """\n((( """]  # ((((\nb = {"k": (1, [2])}\n') == (3, 3)
    assert bracket_depth(DEEP) == (5000, 1)


def test_deeply_nested_buck_is_a_finding_and_the_rest_is_still_reviewed(case_repo):
    # The seed defect (a CUDA target visible to xplat) arrives with a 5,000-deep list in another
    # package: the interpreter's parser would overflow its stack on it and kill the process.
    repo, base, _ = case_repo("pr24817-cuda-outside-fbcode")
    (repo / "hostile").mkdir()
    (repo / "hostile" / "BUCK").write_text(DEEP)
    git(repo, "add", "hostile/BUCK")
    git(repo, "commit", "-q", "-m", "hostile")
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
            "HEAD",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    hostile = [f for f in findings if f["path"] == "hostile/BUCK"]
    assert {f["rule"] for f in hostile} == {"buck-eval-error"}
    assert f"more than {MAX_BRACKET_DEPTH}" in hostile[0]["message"]
    assert "cuda-guard-missing" in {f["rule"] for f in findings}  # the real defect is still reported
