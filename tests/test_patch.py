"""`--diff`: the diff plus the base revision define the head, applied in memory (bare repositories too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import MalformedDiff
from bot.patch import PatchDoesNotApply, apply_diff
from bot.tree import Symlink, memory_tree
from fixtures.cases import git

ROOT = Path(__file__).resolve().parents[1]
BASE = memory_tree({"a.txt": "1\n2\n3\n4\n5\n", "gone.txt": "x\n", "link": Symlink("a.txt")}, revision="b" * 40)


def diff(*files: str) -> str:
    return "".join(files)


MODIFY = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -3,2 +3,2 @@\n 3\n-4\n+four\n"
DELETE = (
    "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
)
ADD = "diff --git a/new.txt b/new.txt\nnew file mode 100755\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n\\ No newline at end of file\n"
RENAME = "diff --git a/a.txt b/b.txt\nsimilarity index 80%\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n"


def test_modify_add_delete_apply_and_keep_symlinks():
    head = apply_diff(BASE, diff(MODIFY, DELETE, ADD))
    tree = head.tree
    assert tree.paths() == ("a.txt", "link", "new.txt")
    assert tree.read_text("a.txt") == "1\n2\n3\nfour\n5\n"
    assert tree.read_text("new.txt") == "new" and tree.entry("new.txt").mode == "100755"
    assert tree.read_link("link") == "a.txt" and tree.read_text("link") == tree.read_text("a.txt")
    assert {c.path: c.status for c in head.changes.files} == {
        "a.txt": "modified",
        "gone.txt": "deleted",
        "new.txt": "added",
    }
    assert tree.revision.startswith("bbbbbbbbbbbb+diff:")


def test_rename_with_changes_moves_the_file():
    tree = apply_diff(BASE, RENAME).tree
    assert not tree.exists("a.txt") and tree.read_text("b.txt") == "one\n2\n3\n4\n5\n"


def test_a_hunk_shifted_as_a_whole_applies_like_git_apply():
    shifted = MODIFY.replace("@@ -3,2 +3,2 @@", "@@ -1,2 +1,2 @@")
    assert apply_diff(BASE, shifted).tree.read_text("a.txt") == "1\n2\n3\nfour\n5\n"


@pytest.mark.parametrize(
    "text, message",
    [
        (MODIFY.replace(" 3\n-4", " 3\n-40"), "hunk 1 (@@ -3,2 @@) does not apply"),
        (ADD.replace("new.txt", "a.txt"), "already exists at the base revision"),
        (DELETE.replace("gone.txt", "absent.txt"), "does not exist at the base revision"),
        (
            "diff --git a/m.bin b/m.bin\nnew file mode 100644\nBinary files /dev/null and b/m.bin differ\n",
            "binary change",
        ),
    ],
)
def test_what_does_not_apply_is_rejected(text, message):
    with pytest.raises(PatchDoesNotApply, match=message.replace("(", r"\(").replace(")", r"\)")):
        apply_diff(BASE, text)


@pytest.mark.parametrize(
    "text",
    [
        MODIFY.replace("@@ -3,2 +3,2 @@", "@@ -a,b +c,d @@"),
        MODIFY.replace("a/a.txt", "a/../outside.txt").replace("b/a.txt", "b/../outside.txt"),
        "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n",
        MODIFY.replace("a.txt", ".git/hooks/pre-commit"),
    ],
)
def test_malformed_headers_and_escaping_paths_are_rejected(text):
    with pytest.raises(MalformedDiff):
        apply_diff(BASE, text)


def test_a_removed_line_that_looks_like_a_header_is_content():
    base = memory_tree({"q.sql": "-- comment\nselect 1;\n"})
    text = "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1 @@\n--- comment\n select 1;\n"
    assert apply_diff(base, text).tree.read_text("q.sql") == "select 1;\n"


def pr_check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        timeout=300,
    )


def _force_link_diff(repo: Path) -> str:
    targets = repo / "runtime/core/targets.bzl"  # linked into the pybindings extension
    original = targets.read_text()
    targets.write_text(
        original.replace(
            '        visibility = ["PUBLIC"],\n', '        link_whole = True,\n        visibility = ["PUBLIC"],\n', 1
        )
    )
    text = git(repo, "diff") + "\n"
    targets.write_text(original)  # the work tree is clean again: the diff alone defines the head
    return text


def test_diff_with_a_clean_work_tree_reviews_the_diff(case_repo):
    repo, _, _ = case_repo("clean-cpu-target")
    text = _force_link_diff(repo)
    result = pr_check("review", "--repo", str(repo), "--diff", "-", "--format", "json", stdin=text)
    document = json.loads(result.stdout)
    assert [(f["rule"], f["path"]) for f in document["findings"]] == [
        ("link-whole-without-python-dlopen", "runtime/core/targets.bzl")
    ]
    assert document["head"].startswith(document["base"][:12] + "+diff:")


def test_diff_on_a_bare_repository(case_repo, tmp_path):
    repo, _, head = case_repo("clean-cpu-target")
    text = _force_link_diff(repo)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    patch = tmp_path / "change.diff"
    patch.write_text(text)
    result = pr_check("review", "--repo", str(bare), "--diff", str(patch), "--format", "json")
    document = json.loads(result.stdout)
    assert document["base"] == head
    assert [f["rule"] for f in document["findings"]] == ["link-whole-without-python-dlopen"]  # nothing reads as deleted


def test_a_diff_that_does_not_apply_is_an_input_error(case_repo):
    repo, _, _ = case_repo("clean-cpu-target")
    text = _force_link_diff(repo).replace('visibility = ["PUBLIC"]', 'visibility = ["NOWHERE"]')
    result = pr_check("review", "--repo", str(repo), "--diff", "-", stdin=text)
    assert result.returncode == 2 and result.stdout == ""
    assert "does not apply to the base revision" in result.stderr and "Traceback" not in result.stderr
