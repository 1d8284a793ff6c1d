"""ChangeSet parsing and reading git's object database without a checkout."""

from __future__ import annotations

import pytest

from bot.diff import parse_diff
from bot.errors import MalformedDiff, NotAGitRepository, UnknownRevision
from bot.repo import GitRepository
from fixtures.cases import git, init_base_repository


def test_parse_diff_handles_renames_deletions_binaries_modes_and_no_newline():
    text = (
        "diff --git a/old.bzl b/new.bzl\n"
        "similarity index 90%\n"
        "rename from old.bzl\n"
        "rename to new.bzl\n"
        "--- a/old.bzl\n"
        "+++ b/new.bzl\n"
        "@@ -1,2 +1,2 @@\n"
        " keep\n"
        "-old\n"
        "+new\n"
        "\\ No newline at end of file\n"
        "diff --git a/gone.h b/gone.h\n"
        "deleted file mode 100644\n"
        "--- a/gone.h\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-#pragma once\n"
        "diff --git a/model.bin b/model.bin\n"
        "new file mode 100644\n"
        "Binary files /dev/null and b/model.bin differ\n"
        "diff --git a/run.sh b/run.sh\n"
        "old mode 100644\n"
        "new mode 100755\n"
    )
    changes = parse_diff(text).by_path()
    renamed = changes["new.bzl"]
    assert (renamed.status, renamed.old_path, renamed.added, renamed.removed) == (
        "renamed",
        "old.bzl",
        frozenset({2}),
        frozenset({2}),
    )
    assert renamed.no_newline_at_end and renamed.commentable == frozenset({1, 2})
    assert changes["gone.h"].status == "deleted"
    assert changes["model.bin"].binary and changes["model.bin"].status == "added"
    assert changes["run.sh"].mode_changed and changes["run.sh"].new_mode == "100755"


def test_malformed_diff_raises_a_named_error():
    with pytest.raises(MalformedDiff):
        parse_diff("hello\nworld\n")
    with pytest.raises(MalformedDiff):
        parse_diff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n+only one line\n")


def test_repository_reads_any_revision_and_resolves_symlinks(tmp_path):
    repo_path, base = init_base_repository(tmp_path)
    (repo_path / "runtime/core/error.h").write_text("#pragma once\n// changed\n")
    git(repo_path, "commit", "-qam", "change")
    with GitRepository(repo_path) as repo:
        old, new = repo.tree(base), repo.tree("HEAD")
        assert old.read_text("runtime/core/error.h").startswith("#pragma once\nnamespace")
        assert new.read_text("runtime/core/error.h") == "#pragma once\n// changed\n"
        assert new.gitlinks() == {"shim": "52196a3be467802f1cadce1debe7d8712e7327ee"}
        assert new.read_link("shim_et/tools") == "../shim/tools"
        assert new.read("shim/tools/x.bzl") is None  # inside the submodule: not in the tree
        with pytest.raises(UnknownRevision):
            repo.resolve("does-not-exist")


def test_missing_blobs_read_as_none(tmp_path):
    repo_path, _ = init_base_repository(tmp_path)
    blob = git(repo_path, "rev-parse", "HEAD:runtime/core/error.h")
    obj = repo_path / ".git" / "objects" / blob[:2] / blob[2:]
    obj.unlink()  # a partial clone lacks some blobs: reading must not need them
    with GitRepository(repo_path) as repo:
        tree = repo.tree("HEAD")
        assert tree.read("runtime/core/error.h") is None
        assert tree.read_text("runtime/core/BUCK").startswith("load(")


def test_not_a_repository(tmp_path):
    with pytest.raises(NotAGitRepository):
        GitRepository(tmp_path)
    with pytest.raises(NotAGitRepository):
        GitRepository(tmp_path / "absent")
