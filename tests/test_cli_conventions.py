"""Linter conventions: validated arguments (exit 2 before any work), -q/-v, --select/--ignore,
--exit-zero, --config, demo --list, help on every option, the default base, scan filters."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.cases import CASES, git
from pr_check.cli import build_parser
from pr_check.revisions import normalize_remote

ROOT = Path(__file__).resolve().parents[1]


def pr_check(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("review", "--output", "/nonexistent/dir/x.json"), "directory /nonexistent/dir does not exist"),
        (("review", "--output", "/"), "is a directory"),
        (("review", "--fail-level", "bogus"), "invalid choice: 'bogus'"),
        (("review", "--select", "no-such-rule"), "unknown rule id(s) no-such-rule"),
        (("scan", "--statistics", "--format", "json"), "--statistics prints text"),
        (("review", "--config", "/nonexistent.toml"), "--config /nonexistent.toml"),
        (("review", "--diff", "/nonexistent.diff"), "cannot read diff"),
        (("demo", "--case", "nope"), "unknown demo case 'nope'"),
        (("review", "-q", "-v"), "not allowed with argument"),
    ],
)
def test_usage_errors_exit_2_before_any_work(args, message, tmp_path):
    # --repo points at no repository: an argument error must be found before the repository is opened.
    result = pr_check(*args, *(("--repo", str(tmp_path)) if args[0] != "demo" else ()))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and result.stdout == "" and "Traceback" not in result.stderr


def test_every_option_has_help():
    def walk(parser: argparse.ArgumentParser, where: str):
        for action in parser._actions:  # noqa: SLF001 - argparse keeps its actions there
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for name, child in action.choices.items():
                    yield from walk(child, f"{where} {name}")
            elif not isinstance(action, argparse._HelpAction):  # noqa: SLF001
                yield where, action

    missing = [f"{where}: {action.dest}" for where, action in walk(build_parser(), "pr-check") if not action.help]
    assert not missing


def test_demo_list_names_every_case():
    result = pr_check("demo", "--list")
    assert result.returncode == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == list(CASES)


def test_quiet_verbose_select_ignore_and_exit_zero(case_repo):
    repo, base, head = case_repo("pr24643-shim-linkage")
    common = ("review", "--repo", str(repo), "--base", base, "--head", head)
    everything = json.loads(pr_check(*common, "--format", "json").stdout)["findings"]
    rules = sorted({f["rule"] for f in everything})
    assert len(rules) >= 2
    quiet = pr_check(*common, "-q")
    assert quiet.stdout.splitlines() == [
        f"{f['path']}:{f['line']}: {f['severity']} {f['rule']}: {f['message']}" for f in everything
    ]
    verbose = pr_check(*common, "-v")
    assert "Checks run:" in verbose.stdout and "GPU smoke job: required" in verbose.stdout
    selected = json.loads(pr_check(*common, "--format", "json", "--select", rules[0]).stdout)["findings"]
    assert {f["rule"] for f in selected} == {rules[0]}
    ignored = json.loads(pr_check(*common, "--format", "json", "--ignore", ",".join(rules[1:])).stdout)["findings"]
    assert {f["rule"] for f in ignored} == {rules[0]}
    assert pr_check(*common).returncode == 1 and pr_check(*common, "--exit-zero").returncode == 0


def test_local_config_is_used_and_marked_as_not_the_bases(case_repo, tmp_path):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    local = tmp_path / "try.toml"
    local.write_text('[rules]\ndisable = ["cuda-guard-missing"]\n')
    common = ("review", "--repo", str(repo), "--base", base, "--head", head, "--config", str(local), "--no-compile")
    text = pr_check(*common)
    assert f"config: LOCAL FILE {local} (not the base revision's .github/pr-check.toml)" in text.stdout
    assert "cuda-guard-missing" not in text.stdout and text.returncode == 0
    document = json.loads(pr_check(*common, "--format", "json").stdout)
    assert document["stats"]["config"] == {"source": "local", "path": str(local)}
    local.write_text("[rules]\nsilence = true\n")
    bad = pr_check(*common)
    assert bad.returncode == 2 and f"{local}: unknown key rules.silence" in bad.stderr


def test_default_base_is_the_merge_base_with_the_remotes_default_branch(case_repo, tmp_path):
    upstream, base, head = case_repo("pr24817-cuda-outside-fbcode")
    git(upstream, "checkout", "-q", "-b", "feature", head)
    git(upstream, "branch", "-q", "-f", "main", base)  # main stays at the base; the PR is a branch
    git(upstream, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    git(clone, "checkout", "-q", "feature")
    result = pr_check("review", "--repo", str(clone), "--head", "HEAD", "--format", "json")
    assert json.loads(result.stdout)["base"] == base and json.loads(result.stdout)["head"] == head
    # Without --head the work tree (here equal to HEAD's) is reviewed against the same base.
    work_tree = json.loads(pr_check("review", "--repo", str(clone), "--format", "json").stdout)
    assert (work_tree["base"], work_tree["head"]) == (base, "work tree")
    assert work_tree["findings"] == json.loads(result.stdout)["findings"]
    text = pr_check("review", "--repo", str(clone))
    assert f"base: origin/HEAD ({base[:12]})" in text.stdout


def test_default_base_works_on_a_bare_mirror(executorch_mirror):
    result = pr_check("review", "--repo", str(executorch_mirror), "--head", "refs/heads/main")
    assert result.returncode == 0, result.stderr
    assert "base: main (" in result.stdout


def test_scan_on_the_real_tree_has_a_header_statistics_and_filters(executorch_mirror):
    # The compiled tier is left out: it compiles real TUs of the whole tree (minutes on shared cores).
    result = pr_check(
        "scan", "--repo", str(executorch_mirror), "--rev", "refs/heads/main", "--statistics", "--no-compile"
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pr-check scan ") and "the whole tree" in lines[0] and "(empty)" not in lines[0]
    assert {"Findings by rule:", "Findings by cell:", "Findings by directory:"} <= set(lines)
    filtered = pr_check(
        "scan",
        "--repo",
        str(executorch_mirror),
        "--rev",
        "refs/heads/main",
        "--path",
        "backends/cuda",
        "--ignore",
        "link-whole-without-python-dlopen",
        "--format",
        "json",
        "--no-compile",
    )
    findings = json.loads(filtered.stdout)["findings"]
    assert findings and all(f["path"].startswith("backends/cuda/") for f in findings)
    assert all(f["rule"] != "link-whole-without-python-dlopen" for f in findings)


def test_remote_urls_become_repository_uris():
    assert normalize_remote("git@github.com:pytorch/executorch.git") == "https://github.com/pytorch/executorch"
    assert (
        normalize_remote("https://token@github.com/pytorch/executorch.git") == "https://github.com/pytorch/executorch"
    )
    assert normalize_remote("/srv/git/executorch") is None


def test_readme_points_at_what_the_repository_has():
    readme = (ROOT / "README.md").read_text()
    assert "design 5" not in readme and "bot/render/report.schema.json" in readme
    assert (ROOT / "bot/render/report.schema.json").is_file()
