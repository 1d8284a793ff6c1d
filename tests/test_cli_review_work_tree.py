"""`pr-check review` without --head reviews the work tree (as `fix` does); --head REV a commit.

The repository is the #24817 fixture with its change taken back out of the commit: HEAD (and
`main`, the default base) is the base commit, and the change sits in the work tree, one file staged,
one edited and unstaged, one new and untracked.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.cases import git
from tests.test_cli import pr_check

CASE = "pr24817-cuda-outside-fbcode"
# The change's two blockers (written from the case: targets.bzl makes cuda_platform depend on
# //extension/cuda in xplat without a guard; extension/cuda/BUCK binds its targets into xplat).
GUARD_ON_BUCK = "extension/cuda/BUCK:6: blocker cuda-guard-missing:"


def _uncommitted(case_repo) -> tuple[Path, str]:
    repo, base, _head = case_repo(CASE)
    git(repo, "reset", "-q", "--mixed", base)  # the change leaves the commit, stays in the files
    git(repo, "add", "extension/cuda/BUCK")  # staged; targets.bzl unstaged; platform.cpp untracked
    assert git(repo, "diff", "--cached", "--name-only").split() == ["extension/cuda/BUCK"]
    assert git(repo, "diff", "--name-only").split() == ["backends/cuda/runtime/targets.bzl"]
    assert git(repo, "ls-files", "--others", "--exclude-standard").split() == ["backends/cuda/runtime/platform.cpp"]
    return repo, base


def test_review_without_head_reviews_staged_unstaged_and_untracked_edits(case_repo):
    repo, base = _uncommitted(case_repo)
    index_before = (repo / ".git" / "index").read_bytes()
    result = pr_check("review", "--repo", str(repo), "--color", "never")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"pr-check review {base[:12]}..work tree: 3 files changed"
    assert lines[1].startswith("head: work tree (tracked edits, staged or not, and untracked files not ignored")
    assert any(line.startswith("base: main") for line in lines[1:4])
    quiet = pr_check("review", "--repo", str(repo), "-q").stdout.splitlines()
    assert [line for line in quiet if "cuda-guard-missing" in line] == [
        line for line in quiet if line.startswith(GUARD_ON_BUCK)
    ]
    assert any(line.startswith(GUARD_ON_BUCK) for line in quiet)
    # Reviewing touched neither the index nor HEAD.
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "rev-parse", "HEAD").strip() == base


def test_review_with_head_reviews_the_commit_and_says_so(case_repo):
    repo, base = _uncommitted(case_repo)
    result = pr_check("review", "--repo", str(repo), "--head", "HEAD", "--color", "never")
    assert result.returncode == 0, result.stdout + result.stderr  # the commit itself holds no change
    lines = result.stdout.splitlines()
    assert lines[0] == f"pr-check review {base[:12]}..{base[:12]}: 0 files changed"
    assert lines[1] == f"head: HEAD ({base[:12]}, committed)"


def test_ignored_files_are_not_part_of_the_work_tree(case_repo):
    repo, base, head = case_repo(CASE)
    git(repo, "checkout", "-q", "-b", "topic", head)
    git(repo, "branch", "-q", "-f", "main", base)
    (repo / ".git" / "info" / "exclude").write_text("scratch/\n")
    (repo / "scratch").mkdir()
    (repo / "scratch" / "BUCK").write_text('load("//nowhere:missing.bzl", "x")\nx(\n')  # broken, but ignored
    result = pr_check("review", "--repo", str(repo), "--format", "json")
    document = json.loads(result.stdout)
    assert document["head"] == "work tree"
    assert not [f for f in document["findings"] if f["path"].startswith("scratch/")]
    assert {f["path"] for f in document["findings"] if f["rule"] == "cuda-guard-missing"} == {
        "extension/cuda/BUCK"
    }  # cuda_platform is named on it (tests/test_fixture_cases.py)


def test_a_bare_repository_reviews_head_and_says_so(case_repo, tmp_path):
    repo, base, head = case_repo(CASE)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    result = pr_check("review", "--repo", str(bare), "--base", base, "--color", "never")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"pr-check review {base[:12]}..{head[:12]}: 3 files changed"
    assert lines[1] == f"head: HEAD ({head[:12]}, committed; a bare repository has no work tree)"
