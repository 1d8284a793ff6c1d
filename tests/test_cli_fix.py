"""`pr-check fix` and `pr-check hook` on real git work trees, as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from bot.fixes import apply_fixes
from bot.model import Finding, Fix, Severity
from bot.tree import Symlink, memory_tree
from fixtures.cases import git
from pr_check.commands.fix import HOOK_FILE_KINDS
from pr_check.fix import fix_round

ROOT = Path(__file__).resolve().parents[1]
LINK_WHOLE = '        link_whole = True,\n        visibility = ["PUBLIC"],\n'


def pr_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def snapshot(repo: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file of the work tree (git data aside) with its contents, mtime and mode."""
    found = {}
    for path in sorted(repo.rglob("*")):
        relative = path.relative_to(repo).as_posix()
        if relative.startswith(".git/") or not path.is_file() or path.is_symlink():
            continue
        info = path.stat()
        found[relative] = (path.read_bytes(), info.st_mtime_ns, info.st_mode)
    return found


def force_link_core(repo: Path) -> Path:
    """Make //runtime/core:core link whole without `supports_python_dlopen` (a finding with a fix)."""
    targets = repo / "runtime/core/targets.bzl"
    text = targets.read_text()
    assert text.count('        visibility = ["PUBLIC"],\n') >= 1
    targets.write_text(text.replace('        visibility = ["PUBLIC"],\n', LINK_WHOLE, 1))
    return targets


def test_fix_on_the_demo_pr_leaves_a_tree_that_reviews_clean_and_a_second_run_changes_nothing(case_repo):
    repo, base, _ = case_repo("pr24817-cuda-outside-fbcode")
    first = pr_check("fix", "--repo", str(repo), "--base", base)
    assert first.returncode == 1, first.stdout + first.stderr
    changed = git(repo, "status", "--porcelain")
    assert changed, "fix said it changed files, but the work tree is as committed"
    before_second = snapshot(repo)
    second = pr_check("fix", "--repo", str(repo), "--base", base)
    assert second.returncode == 0, second.stdout + second.stderr
    assert snapshot(repo) == before_second  # contents, mtimes and modes: nothing written
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fixed")
    review = pr_check(
        "review", "--repo", str(repo), "--base", base, "--head", "HEAD", "--format", "json", "--no-compile"
    )
    assert review.returncode == 0, review.stdout + review.stderr
    # The blocker is gone and nothing is left: the fix guards extension/cuda's two CUDA targets
    # outside fbcode only (a dict conditioned on `is_fbcode()`, since fbcode and OSS read the file
    # too), so fbcode's targets are as they were and `test-missing` has no change to note.
    left = json.loads(review.stdout)["findings"]
    assert left == [], left
    guarded = (repo / "extension/cuda/targets.bzl").read_text()
    splat = '**({} if is_fbcode() else {"compatible_with": ["ovr_config//cuda:has_cuda"], "platforms": [CXX]})'
    assert guarded.count(splat) == 2  # runtime_api and caller_stream; cuda_allocator follows runtime_api
    assert 'load("@fbsource//tools/build_defs:platform_defs.bzl", "CXX")' in guarded
    assert 'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")' in guarded
    # cuda_platform is CUDA only through caller_stream: guarding that makes it incompatible too.
    assert (repo / "backends/cuda/runtime/targets.bzl").read_text().count("**cuda_kwargs") == 2


def test_fix_writes_only_the_file_its_fix_names_and_keeps_its_mode(case_repo):
    repo, _, head = case_repo("clean-cpu-target")
    targets = force_link_core(repo)
    targets.chmod(0o755)
    before = snapshot(repo)
    index_before = (repo / ".git/index").read_bytes()
    result = pr_check("fix", "--repo", str(repo), "--base", head)
    assert result.returncode == 1, result.stdout + result.stderr
    after = snapshot(repo)
    assert {path for path in after if after[path] != before[path]} == {"runtime/core/targets.bzl"}
    assert after["runtime/core/targets.bzl"][2] & 0o777 == 0o755
    added = [
        line for line in git(repo, "diff", "-U0").splitlines() if line.startswith("+") and not line.startswith("+++")
    ]
    assert [line[1:].strip() for line in added] == ["link_whole = True,", "supports_python_dlopen = True,"]
    assert (repo / ".git/index").read_bytes() == index_before and git(repo, "rev-parse", "HEAD") == head
    assert "fixed: runtime/core/targets.bzl:" in result.stdout and "link-whole-without-python-dlopen" in result.stdout
    again = pr_check("fix", "--repo", str(repo), "--base", head)
    assert again.returncode == 0 and snapshot(repo) == after


def test_fix_diff_writes_nothing_and_prints_a_patch_git_applies(case_repo, tmp_path):
    repo, _, head = case_repo("clean-cpu-target")
    force_link_core(repo)
    before = snapshot(repo)
    result = pr_check("fix", "--repo", str(repo), "--base", head, "--diff")
    assert result.returncode == 1, result.stderr
    assert snapshot(repo) == before
    assert result.stdout.startswith("diff --git a/runtime/core/targets.bzl b/runtime/core/targets.bzl\n")
    assert "+        supports_python_dlopen = True,\n" in result.stdout
    assert "fixed: runtime/core/targets.bzl:" in result.stderr  # the summary stays off the patch
    patch = tmp_path / "fix.diff"
    patch.write_text(result.stdout)
    subprocess.run(["git", "-C", str(repo), "apply", "--check", str(patch)], check=True)
    clean = pr_check("fix", "--repo", str(repo), "--base", head, "--diff")
    assert clean.returncode == 1 and clean.stdout == result.stdout  # still nothing written


def test_fix_takes_the_base_review_would_take(case_repo):
    repo, base, _ = case_repo("clean-cpu-target")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "branch", "-f", "main", base)  # the pull request's commit is on `feature` only
    force_link_core(repo)
    result = pr_check("fix", "--repo", str(repo), "--diff")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[0] == f"base: main ({base[:12]})"
    assert result.stderr.splitlines()[1].startswith(f"pr-check fix {base[:12]}..work tree (")


def test_an_untracked_build_file_is_reviewed(case_repo):
    repo, _, head = case_repo("clean-cpu-target")
    package = repo / "runtime/extra"
    package.mkdir()
    (package / "BUCK").write_text('load(":targets.bzl", "define_common_targets")\ndefine_common_targets(\n')
    assert "?? runtime/extra/" in git(repo, "status", "--porcelain")
    result = pr_check("fix", "--repo", str(repo), "--base", head)
    # Nothing to change, but a blocker is left: it still fails, as `ruff --fix` does.
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^left: runtime/extra/BUCK:\d+ parse-error \(blocker\): no mechanical fix$", result.stdout, re.M)
    assert git(repo, "status", "--porcelain") == "?? runtime/extra/"  # and nothing was written
    assert pr_check("fix", "--repo", str(repo), "--base", head, "--diff").returncode == 1


def test_a_deleted_file_is_part_of_the_reviewed_change(case_repo):
    repo, _, head = case_repo("clean-cpu-target")
    (repo / "runtime/core/targets.bzl").unlink()
    result = pr_check("fix", "--repo", str(repo), "--base", head)
    # runtime/core/BUCK loads the deleted file: the package no longer evaluates (a blocker with no
    # mechanical fix). Until the store recorded a missing load's path as an input, the head's
    # failure was served to the base too, and the deletion looked harmless.
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"pr-check fix {head[:12]}..work tree (1 file changed): 0 findings fixed")
    assert "left: runtime/core/BUCK:1 buck-eval-error (blocker): no mechanical fix" in result.stdout
    assert git(repo, "status", "--porcelain") == "D runtime/core/targets.bzl"


def test_fix_in_a_bare_repository_is_a_usage_error(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    result = pr_check("fix", "--repo", str(tmp_path / "bare.git"), "--base", "HEAD")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_hook_reviews_the_staged_change(case_repo):
    repo, _, _ = case_repo("clean-cpu-target")
    (repo / "runtime/core/BUCK").write_text('load(":targets.bzl", "define_common_targets")\ndefine_common_targets(\n')
    unstaged = pr_check("hook", "--repo", str(repo))
    assert unstaged.returncode == 0 and "no staged Buck, CMake or C++ change" in unstaged.stdout
    git(repo, "add", "runtime/core/BUCK")
    staged = pr_check("hook", "--repo", str(repo))
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "parse-error" in staged.stdout and "runtime/core/BUCK" in staged.stdout


def test_hook_fix_leaves_a_file_with_unstaged_edits_alone_and_fixes_it_once_they_are_gone(case_repo):
    repo, _, _ = case_repo("clean-cpu-target")
    targets = force_link_core(repo)
    git(repo, "add", "runtime/core/targets.bzl")
    staged_text = targets.read_text()
    targets.write_text(staged_text + "# an unstaged edit\n")
    edited = snapshot(repo)
    result = pr_check("hook", "--repo", str(repo), "--fix", "--fail-level", "minor")
    assert result.returncode == 1, result.stdout + result.stderr  # the minor finding stays staged
    assert snapshot(repo) == edited
    assert "not written: runtime/core/targets.bzl: it has unstaged changes" in result.stdout
    targets.write_text(staged_text)
    fixed = pr_check("hook", "--repo", str(repo), "--fix")
    assert fixed.returncode == 1 and "written: runtime/core/targets.bzl" in fixed.stdout
    assert "supports_python_dlopen = True" in targets.read_text()
    assert git(repo, "diff", "--cached", "--name-only") == "runtime/core/targets.bzl"
    assert "supports_python_dlopen" not in git(repo, "show", ":runtime/core/targets.bzl")  # the index is the user's


def test_the_pre_commit_hooks_run_pr_check_hook_on_the_files_it_reviews():
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h: hooks[h]["entry"] for h in hooks} == {"pr-check": "pr-check hook", "pr-check-fix": "pr-check hook --fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        pattern = re.compile(hook["files"])
        samples = [f"dir/{kind}" if not kind.startswith(".") else f"dir/name{kind}" for kind in HOOK_FILE_KINDS]
        assert [s for s in samples if not pattern.search(s)] == []
        assert [s for s in ("README.md", "dir/tool.py", "BUCKET", "dir/x.hpp.orig") if pattern.search(s)] == []


# -- one round, on memory trees ------------------------------------------------------------
def finding(path: str, fix: Fix | None, fingerprint: str = "f1") -> Finding:
    return Finding(
        "some-rule",
        Severity.MAJOR,
        "title",
        path,
        fix.line if fix else 1,
        fix.end_line if fix else 1,
        "message",
        fingerprint,
        fix=fix,
    )


def test_a_round_refuses_stale_fixes_and_symlinks_and_keeps_crlf():
    tree = memory_tree({"a.bzl": "x = 1\r\ny = 2\r\n", "b.bzl": "z = 3\n", "link.bzl": Symlink("b.bzl")})
    crlf = finding("a.bzl", Fix("a.bzl", 1, 1, "x = 1\ny = 1", "", "x = 1\r"), "crlf")
    stale = finding("b.bzl", Fix("b.bzl", 1, 1, "z = 4", "", "z = 0"), "stale")
    through_link = finding("link.bzl", Fix("link.bzl", 1, 1, "z = 5", "", "z = 3"), "link")
    done = fix_round([crlf, stale, through_link], tree)
    assert dict(done.files) == {"a.bzl": b"x = 1\r\ny = 1\r\ny = 2\r\n"}
    assert done.applied == (crlf,)
    assert {r.finding.fingerprint: r.reason for r in done.refused} == {
        "stale": "the lines it replaces are no longer in the file",
        "link": "the file is not in the tree (or is a symlink)",
    }


def test_a_round_postpones_an_overlapping_fix_and_withholds_what_it_is_told():
    tree = memory_tree({"a.bzl": "a\nb\nc\n"})
    first = finding("a.bzl", Fix("a.bzl", 1, 2, "A\nB", "", "a\nb"), "first")
    second = finding("a.bzl", Fix("a.bzl", 2, 3, "b\nC", "", "b\nc"), "second")
    done = fix_round([second, first], tree)
    assert done.files == {"a.bzl": apply_fixes("a\nb\nc\n", [first.fix]).text.encode()}
    assert done.applied == (first,) and done.postponed == (second,)
    held = fix_round([first], tree, {"first": "because"})
    assert held.files == {} and [r.reason for r in held.refused] == ["because"]
