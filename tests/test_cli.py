"""The CLI as a user runs it: a real process, exit codes, one-line errors, JSON and SARIF."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import checks
from fixtures.cases import git
from pr_check.rules_page import render_rules_markdown

ROOT = Path(__file__).resolve().parents[1]


def pr_check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args], capture_output=True, text=True, cwd=cwd or ROOT, timeout=120
    )


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def test_review_json_follows_the_public_contract(case_repo, tmp_path):
    repo, base, head = case_repo("pr24643-shim-linkage")
    result = pr_check("review", "--repo", str(repo), "--base", base, "--head", head, "--format", "json")
    assert result.returncode == 1, result.stderr  # a blocker is at or above the default fail level
    document = json.loads(result.stdout)
    assert document["version"] == 1 and document["base"] == base and document["head"] == head
    finding = next(f for f in document["findings"] if f["rule"] == "dep-unknown-external")
    assert set(finding) >= {
        "rule",
        "severity",
        "path",
        "line",
        "end_line",
        "target",
        "cell",
        "title",
        "message",
        "fingerprint",
        "evidence",
        "fix",
    }
    assert finding["severity"] == "blocker" and finding["cell"] == "oss"
    assert document["smoke"]["required"] is True and document["smoke"]["reasons"]


def test_fail_level_blocker_passes_a_minor_only_change(case_repo, tmp_path):
    repo, base, _ = case_repo("clean-cpu-target")
    result = pr_check("review", "--repo", str(repo), "--base", base, "--head", "HEAD", "--fail-level", "blocker")
    assert result.returncode == 0, result.stderr
    assert "No findings new at head" in result.stdout


def test_sarif_has_fingerprints_and_rules(case_repo):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    args = ("review", "--repo", str(repo), "--base", base, "--head", head, "--format", "sarif", "--no-compile")
    result = pr_check(*args)
    sarif = json.loads(result.stdout)
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    from bot.engine import ENGINE_RULES

    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {c.id for c in checks.ALL} | set(ENGINE_RULES)
    assert all(r["partialFingerprints"]["prCheck/v1"] for r in run["results"])
    assert {r["ruleId"] for r in run["results"]} == {"cuda-guard-missing"}


def test_not_a_git_repository_is_a_one_line_error(tmp_path):
    result = pr_check("review", "--repo", str(tmp_path), "--base", "a", "--head", "b")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"pr-check: error: {tmp_path}: not a git repository"]


def test_unknown_revision_is_a_one_line_error(case_repo):
    repo, base, _ = case_repo("clean-cpu-target")
    result = pr_check("review", "--repo", str(repo), "--base", base, "--head", "no-such-branch")
    assert result.returncode == 2
    assert "unknown revision 'no-such-branch'" in result.stderr and "Traceback" not in result.stderr


def test_malformed_diff_is_a_one_line_error(case_repo, tmp_path):
    repo, _, _ = case_repo("clean-cpu-target")
    bad = tmp_path / "bad.diff"
    bad.write_text("this is not a diff\n")
    result = pr_check("review", "--repo", str(repo), "--diff", str(bad))
    assert result.returncode == 2
    assert "not a unified diff" in result.stderr and "Traceback" not in result.stderr


def test_diff_mode_reviews_the_work_tree(case_repo, tmp_path):
    repo, _, _ = case_repo("clean-cpu-target")
    targets = repo / "runtime/core/targets.bzl"  # linked into the pybindings extension
    targets.write_text(
        targets.read_text().replace(
            '        visibility = ["PUBLIC"],\n', '        link_whole = True,\n        visibility = ["PUBLIC"],\n', 1
        )
    )
    diff = subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True, text=True).stdout
    patch = tmp_path / "change.diff"
    patch.write_text(diff)
    result = pr_check("review", "--repo", str(repo), "--diff", str(patch), "--format", "json")
    rules = {(f["rule"], f["path"]) for f in json.loads(result.stdout)["findings"]}
    assert rules == {("link-whole-without-python-dlopen", "runtime/core/targets.bzl")}


def test_buck_syntax_error_is_a_finding_not_a_crash(case_repo):
    repo, base, _ = case_repo("clean-cpu-target")
    (repo / "runtime/core/BUCK").write_text('load(":targets.bzl", "define_common_targets")\ndefine_common_targets(\n')
    commit_all(repo, "broken")
    result = pr_check(
        "review", "--repo", str(repo), "--base", base, "--head", "HEAD", "--format", "json", "--no-compile"
    )
    findings = json.loads(result.stdout)["findings"]
    assert result.returncode == 1
    assert [(f["rule"], f["path"]) for f in findings] == [("parse-error", "runtime/core/BUCK")]


def test_explain_and_unknown_rule():
    good = pr_check("explain", "cuda-guard-missing")
    assert good.returncode == 0 and "has_cuda" in good.stdout
    bad = pr_check("explain", "no-such-rule")
    assert bad.returncode == 2 and "unknown rule 'no-such-rule'" in bad.stderr


def test_rules_md_is_generated_and_current():
    assert (ROOT / "RULES.md").read_text() == render_rules_markdown(), "run `make rules` to regenerate RULES.md"


def test_demo_prints_the_review():
    result = pr_check("demo")
    assert result.returncode == 0, result.stderr
    assert "cuda-guard-missing" in result.stdout and "extension/cuda/targets.bzl:11" in result.stdout


def test_fail_level_comes_from_the_base_config(case_repo):
    repo, _, _ = case_repo("clean-cpu-target")
    config = repo / ".github" / "pr-check.toml"
    config.parent.mkdir()
    config.write_text('[review]\nfail_level = "minor"\n')
    commit_all(repo, "config")
    base = git(repo, "rev-parse", "HEAD")
    targets = repo / "runtime/core/targets.bzl"  # linked into the pybindings extension
    targets.write_text(
        targets.read_text().replace(
            '        visibility = ["PUBLIC"],\n', '        link_whole = True,\n        visibility = ["PUBLIC"],\n', 1
        )
    )
    commit_all(repo, "force link")
    from_config = pr_check("review", "--repo", str(repo), "--base", base, "--head", "HEAD")
    overridden = pr_check("review", "--repo", str(repo), "--base", base, "--head", "HEAD", "--fail-level", "major")
    assert "link-whole-without-python-dlopen" in from_config.stdout  # a minor finding
    assert (from_config.returncode, overridden.returncode) == (1, 0)


def test_unknown_config_key_is_an_input_error(case_repo):
    repo, _base, _ = case_repo("clean-cpu-target")
    config = repo / ".github" / "pr-check.toml"
    config.parent.mkdir()
    config.write_text("[rules]\nsilence_everything = true\n")
    commit_all(repo, "config")
    result = pr_check("review", "--repo", str(repo), "--base", "HEAD", "--head", "HEAD")
    assert result.returncode == 2
    assert "unknown key rules.silence_everything" in result.stderr


def test_cache_info_and_clean(case_repo, tmp_path):
    repo, base, head = case_repo("clean-cpu-target")
    cache = tmp_path / "cache"
    pr_check("review", "--repo", str(repo), "--base", base, "--head", head, "--cache-dir", str(cache))
    info = pr_check("cache", "info", "--cache-dir", str(cache))
    entries = int(next(line for line in info.stdout.splitlines() if line.startswith("entries:")).split()[1])
    assert info.returncode == 0 and entries > 0
    cleaned = pr_check("cache", "clean", "--cache-dir", str(cache))
    assert cleaned.returncode == 0 and "entries: 0" in cleaned.stdout
