"""A broken `.github/pr-check.toml`: the error says which revision's file it is and lists every problem
in it, in one line, exit 2 (the CLI on a real git repository)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures.cases import build_case_repository, git

ROOT = Path(__file__).resolve().parents[1]
BROKEN = """[review]
fail_level = "fatal"
colour = "always"
[rules]
disable = ["no-such-rule"]
[buck]
cpu_only_cells = "xplat"
"""


def test_every_problem_of_the_base_config_is_listed_with_its_revision(tmp_path):
    repo, _, _ = build_case_repository("clean-cpu-target", tmp_path / "case")
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github" / "pr-check.toml").write_text(BROKEN)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a broken config")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "BUCK").write_text("# a change\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "head")
    result = subprocess.run(
        [sys.executable, "-m", "pr_check.cli", "review", "--repo", str(repo), "--base", base, "--head", "HEAD"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert f".github/pr-check.toml at {base[:12]}: " in line
    # The shapes first (an unknown key, a string for a list), all of them; the values are checked once they hold.
    assert "2 problems" in line and "unknown key review.colour" in line and "buck.cpu_only_cells must be" in line


def test_every_problem_of_values_is_listed_once_the_shapes_hold(tmp_path):
    from bot.config import config_origin, parse_config
    from bot.errors import ConfigError

    text = BROKEN.replace('colour = "always"\n', "").replace('cpu_only_cells = "xplat"', 'cpu_only_cells = ["xplat"]')
    try:
        parse_config(text, frozenset({"cuda-guard-missing"}), origin=config_origin("a" * 40))
    except ConfigError as error:
        message = str(error)
    else:
        raise AssertionError("a config with two wrong values was accepted")
    assert message.startswith(".github/pr-check.toml at aaaaaaaaaaaa: 2 problems: ")
    assert "unknown rule id(s): no-such-rule" in message and "review.fail_level" in message
