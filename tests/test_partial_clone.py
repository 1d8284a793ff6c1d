"""Partial clones and clones missing objects, reviewed by the CLI as users run it.

Real git: a bare repository served over file:// with `uploadpack.allowFilter`, so that a
`git clone --filter=blob:none` of it is a real partial clone whose missing blobs can be fetched
from its promisor remote. What must hold: the review of a partial clone reads what it needs (the
same findings as a complete clone), and when the objects cannot be had, the exit is 2 with one line
naming the file and the remedy, never 3 ("internal error") for a repository's state.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.cases import build_case_repository, git

ROOT = Path(__file__).resolve().parents[1]
CASE = "aoti-shims-link-whole-inconsistent"  # its PR commit edits backends/aoti/targets.bzl (one minor finding)
CHANGED = "backends/aoti/targets.bzl"


def _review(repo: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", "review", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD",
         *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip


def _findings(result: subprocess.CompletedProcess) -> list[tuple[str, str, int]]:
    return [(f["rule"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[Path, Path]:
    """The case's repository as a bare one that serves filtered fetches, and a complete clone of it."""
    base = tmp_path_factory.mktemp("partial")
    work, _, _ = build_case_repository(CASE, base / "work")
    bare = base / "served.git"
    git(base, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    complete = base / "complete"
    git(base, "clone", "-q", f"file://{bare}", str(complete))
    return bare, complete


def _partial_clone(bare: Path, destination: Path) -> Path:
    git(destination.parent, "clone", "-q", "--filter=blob:none", f"file://{bare}", str(destination))
    assert git(destination, "config", "remote.origin.promisor") == "true"
    return destination


def _missing_blobs(repo: Path) -> set[str]:
    listing = git(repo, "rev-list", "--objects", "--missing=print", "HEAD~1^{tree}", "HEAD^{tree}")
    return {line[1:] for line in listing.splitlines() if line.startswith("?")}


def test_a_partial_clone_is_reviewed_like_a_complete_one(served, tmp_path):
    bare, complete = served
    partial = _partial_clone(bare, tmp_path / "partial")
    assert _missing_blobs(partial)  # the base's version of the changed file, at least, is not there
    expected = _review(complete, "--format", "json")
    got = _review(partial, "--format", "json")
    assert got.returncode == expected.returncode == 0, got.stderr
    assert _findings(got) == _findings(expected)
    assert [(rule, path) for rule, path, _ in _findings(got)] == [("link-whole-without-python-dlopen", CHANGED)]
    assert "internal error" not in got.stderr and "Traceback" not in got.stderr


def test_a_partial_clone_whose_remote_is_gone_exits_2_naming_the_file_and_the_remedy(served, tmp_path):
    bare, _ = served
    partial = _partial_clone(bare, tmp_path / "partial")
    moved = tmp_path / "elsewhere.git"
    shutil.copytree(bare, moved)
    git(partial, "remote", "set-url", "origin", f"file://{tmp_path / 'gone.git'}")
    result = _review(partial)
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error" in line]
    assert CHANGED in line and "partial clone" in line and "promisor remote 'origin'" in line
    assert "fetch origin" in line and "Traceback" not in result.stderr
    # The remedy works: the remote reachable again, the same review succeeds.
    git(partial, "remote", "set-url", "origin", f"file://{moved}")
    assert _review(partial).returncode == 0


def test_a_clone_missing_an_object_exits_2_naming_the_file(served, tmp_path):
    _, complete = served
    damaged = tmp_path / "damaged"
    git(tmp_path, "clone", "-q", "--no-local", str(complete), str(damaged))
    blob = git(damaged, "rev-parse", f"HEAD~1:{CHANGED}")
    # Every object loose (the pack moved out first, or git would keep what the pack has), then one gone.
    outside = tmp_path / "packs"
    shutil.move(damaged / ".git" / "objects" / "pack", outside)
    (damaged / ".git" / "objects" / "pack").mkdir()
    for pack in outside.glob("*.pack"):
        with pack.open("rb") as data:
            subprocess.run(["git", "-C", str(damaged), "unpack-objects", "-q"], stdin=data, check=True)
    (damaged / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    result = _review(damaged)
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error" in line]
    assert CHANGED in line and "fsck" in line and "Traceback" not in result.stderr
