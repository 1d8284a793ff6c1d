"""What users of ruff and semgrep expect of a linter's CLI: file modes, help, colour variables,
progress away from a terminal, and a misspelt suppression reported rather than silently ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASE = "pr24817-cuda-outside-fbcode"
GUARD = "backends/cuda/runtime/targets.bzl"  # line 35: `runtime.cxx_library(` of cuda_platform, a blocker


def run(*args: str, env: dict[str, str] | None = None, umask: int | None = None, cwd: Path | None = None):
    environment = {
        key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")
    }
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=300,
        env={**environment, "PYTHONPATH": str(ROOT), **(env or {})},
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
    )


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_get_the_mode_the_umask_gives(case_repo, tmp_path, umask, mode):
    repo, base, head = case_repo(CASE)
    output = tmp_path / "report.json"
    result = run(
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--head",
        head,
        "--format",
        "json",
        "--output",
        str(output),
        umask=umask,
    )
    assert result.returncode == 1, result.stderr
    assert output.stat().st_mode & 0o777 == mode
    assert json.loads(output.read_text())["head"] == head


def test_an_output_file_that_exists_keeps_its_mode(case_repo, tmp_path):
    repo, base, head = case_repo(CASE)
    output = tmp_path / "report.sarif"
    output.write_text("old")
    output.chmod(0o640)
    run(
        "review",
        "--repo",
        str(repo),
        "--base",
        base,
        "--head",
        head,
        "--format",
        "sarif",
        "--output",
        str(output),
        umask=0o022,
    )
    assert output.stat().st_mode & 0o777 == 0o640 and output.read_text() != "old"


@pytest.mark.parametrize("command", ["review", "scan"])
def test_review_and_scan_help_describe_exit_codes_and_examples(command):
    result = run(command, "--help")
    assert result.returncode == 0
    text = result.stdout
    assert "\nexit codes:\n  0  no finding at or above the fail level" in text
    assert "\n  1  findings at or above the fail level\n" in text and "\n  3  internal error\n" in text
    assert f"\nexamples:\n  pr-check {command} " in text
    # A description line under the usage, not only the one-line help of `pr-check --help`.
    assert text.split("\n\n")[1].startswith(("Review what a change makes new", "Report every finding in a whole tree"))


@pytest.mark.parametrize(
    "env, coloured",
    [
        ({}, False),
        ({"FORCE_COLOR": "1"}, True),
        ({"CLICOLOR_FORCE": "1"}, True),
        ({"FORCE_COLOR": "0"}, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ],
)
def test_force_color_variables_colour_piped_text(case_repo, env, coloured):
    repo, base, head = case_repo(CASE)
    result = run("review", "--repo", str(repo), "--base", base, "--head", head, env=env)
    assert result.returncode == 1, result.stderr
    assert ("\033[" in result.stdout) is coloured
    assert "cuda-guard-missing" in result.stdout


def test_a_cold_review_away_from_a_terminal_says_what_it_is_doing(case_repo, tmp_path):
    repo, base, head = case_repo(CASE)
    review = ("review", "--repo", str(repo), "--base", base, "--head", head, "--cache-dir", str(tmp_path / "cache"))
    quiet = run(*review, "-q")
    assert "evaluating" not in quiet.stderr  # -q: the findings only
    cold = run(*review, "--cache-dir", str(tmp_path / "cold"))
    lines = [line for line in cold.stderr.splitlines() if line.startswith("pr-check: evaluating ")]
    assert [line.split(" in the ")[1].split(" cell")[0] for line in lines] == ["fbcode", "xplat", "oss"]
    assert all(line.endswith("(kept in the cache for the next review)") for line in lines)
    warm = run(*review, "--cache-dir", str(tmp_path / "cold"))
    assert "evaluating" not in warm.stderr  # nothing to evaluate, nothing to say


def test_a_misspelt_rule_in_lint_ignore_is_reported_and_suppresses_nothing(case_repo):
    repo, base, _head = case_repo(CASE)
    path = repo / GUARD
    lines = path.read_text().splitlines(keepends=True)
    assert lines[34].strip() == "runtime.cxx_library("
    lines.insert(34, "    # @lint-ignore cuda-guard-missin: the Jetson toolchain builds it\n")
    lines.insert(0, "# @lint-ignore clang-tidy: another linter's id, not ours to judge\n")
    path.write_text("".join(lines))
    result = run("review", "--repo", str(repo), "--base", base, "--format", "json")  # the work tree
    findings = json.loads(result.stdout)["findings"]
    unused = [f for f in findings if f["rule"] == "unused-suppression"]
    assert [(f["path"], f["line"], f["message"]) for f in unused] == [
        (
            GUARD,
            36,
            "`@lint-ignore cuda-guard-missin` names no rule, so it suppresses nothing; "
            "did you mean `cuda-guard-missing`?",
        )
    ]
    # cuda_platform (the target under the misspelt ignore) is CUDA only through caller_stream, so it is
    # named on the finding at the BUCK line that exposes extension/cuda (tests/test_fixture_cases.py),
    # with its call as evidence: that finding is still reported.
    assert any(
        f["rule"] == "cuda-guard-missing"
        and f["path"] == "extension/cuda/BUCK"
        and any(e["path"] == GUARD and e["line"] == 37 for e in f["evidence"])
        for f in findings
    )


def test_an_output_path_that_is_a_pipe_or_device_is_written_into_not_replaced(tmp_path):
    # `--output /dev/null` run as root once replaced the device with a regular file holding the
    # report (git then read it as a broken config): a path that is no regular file is written into.
    import stat
    import threading

    from pr_check.output import write

    pipe = tmp_path / "report.pipe"
    os.mkfifo(pipe)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()))
    reader.start()
    write('{"findings": []}\n', pipe)
    reader.join(timeout=30)
    assert received == ['{"findings": []}\n']
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert [path.name for path in tmp_path.iterdir()] == ["report.pipe"]  # no temporary file left
    # A regular file is still replaced whole (a reader never sees half a report).
    regular = tmp_path / "report.json"
    write("new\n", regular)
    assert regular.read_text() == "new\n" and stat.S_ISREG(regular.stat().st_mode)
