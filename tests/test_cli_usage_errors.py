"""Usage errors that used to pass as clean: each is exit 2 with one line, or says what it did.

The CLI as users run it (a subprocess) on a real git repository of the fixture cases.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.cases import build_case_repository, git

ROOT = Path(__file__).resolve().parents[1]
CASE = "aoti-shims-link-whole-inconsistent"  # its PR commit has one finding


def pr_check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        timeout=300,
    )


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> tuple[Path, str, str]:
    return build_case_repository(CASE, tmp_path_factory.mktemp("usage") / "case")


def _one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["review", "scan"])
def test_an_empty_select_is_a_usage_error(case, command):
    repo, base, head = case
    where = ["--base", base, "--head", head] if command == "review" else ["--rev", head]
    result = pr_check(command, "--repo", str(repo), *where, "--select", "")
    assert result.returncode == 2
    assert "--select" in _one_line(result) and "no rule" in _one_line(result)


def test_head_with_diff_is_a_usage_error(case):
    repo, base, head = case
    diff = git(repo, "diff", base, head)
    result = pr_check("review", "--repo", str(repo), "--base", base, "--head", head, "--diff", "-", stdin=diff)
    assert result.returncode == 2
    line = _one_line(result)
    assert "--head" in line and "--diff" in line


def test_an_empty_diff_says_there_is_nothing_to_review(case):
    repo, base, _ = case
    result = pr_check("review", "--repo", str(repo), "--base", base, "--diff", "-", stdin="")
    assert result.returncode == 0
    assert "nothing to review" in result.stdout + result.stderr


def test_a_config_edited_in_the_work_tree_is_named_as_not_used(tmp_path):
    repo, _, _ = build_case_repository(CASE, tmp_path / "case")
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github" / "pr-check.toml").write_text('[rules]\ndisable = ["link-whole-without-python-dlopen"]\n')
    result = pr_check("review", "--repo", str(repo), "--base", "HEAD~1")
    notes = [line for line in (result.stdout + result.stderr).splitlines() if ".github/pr-check.toml" in line]
    assert notes and "work tree" in notes[0] and "--config" in notes[0], result.stdout + result.stderr
    # It was not used: the base's (none: the defaults) was, so the finding it disables is reported.
    assert result.returncode == 0 and "link-whole-without-python-dlopen" in result.stdout  # minor: under the fail level
