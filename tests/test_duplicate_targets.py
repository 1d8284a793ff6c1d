"""Duplicate target names: buck2 refuses the package, and so does the model (issue 24, cause 5)."""

from __future__ import annotations

from bot.snapshot import BuildModel
from bot.tree import memory_tree

_TWICE = (
    'cxx_library(name = "util", srcs = ["a.cpp"])\n'
    'cxx_library(name = "other", srcs = ["b.cpp"])\n'
    'cxx_library(name = "util", srcs = ["c.cpp"])\n'
)


def test_a_name_defined_twice_fails_the_package_in_every_cell():
    model = BuildModel(memory_tree({"pkg/BUCK": _TWICE, "pkg/a.cpp": "", "pkg/b.cpp": "", "pkg/c.cpp": ""}))
    for cell in ("fbcode", "xplat", "oss"):
        result = model.cell(cell).packages["pkg"]
        assert result.targets == ()
        assert result.error is not None
        assert (result.error.path, result.error.line) == ("pkg/BUCK", 3)
        assert "`util` is defined twice" in result.error.message
        assert "pkg/BUCK:1" in result.error.message


def test_names_made_by_a_macro_loop_twice_are_refused_at_the_call_site():
    macro = 'def define():\n    for suffix in ["", ""]:\n        native.cxx_library(name = "lib" + suffix)\n'
    model = BuildModel(memory_tree({"pkg/BUCK": 'load(":defs.bzl", "define")\ndefine()\n', "pkg/defs.bzl": macro}))
    error = model.cell("oss").packages["pkg"].error
    assert error is not None and "`lib` is defined twice" in error.message


def test_distinct_names_and_the_static_twins_evaluate():
    text = 'cxx_library(name = "util", srcs = ["a.cpp"])\ncxx_library(name = "util_static", srcs = ["a.cpp"])\n'
    model = BuildModel(memory_tree({"pkg/BUCK": text, "pkg/a.cpp": ""}))
    result = model.cell("oss").packages["pkg"]
    assert result.error is None
    assert {t.name for t in result.targets} == {"util", "util_static"}


def test_duplicate_name_added_to_a_real_package_is_a_new_evaluation_error(executorch_mirror, real_tree_cache):
    # A second `threadpool` (targets.bzl defines the first) in extension/threadpool/BUCK would be
    # refused by buck2; the review must say the package no longer evaluates, at the second one.
    from bot.patch import apply_diff
    from bot.repo import GitRepository
    from bot.store.evaluations import EvaluationCache
    from pr_check.review import review_trees

    with GitRepository(executorch_mirror) as repo:
        base = repo.tree(repo.resolve("refs/heads/main"))
        text = base.read_text("extension/threadpool/BUCK")
        lines = text.splitlines()
        diff = (
            "diff --git a/extension/threadpool/BUCK b/extension/threadpool/BUCK\n"
            "--- a/extension/threadpool/BUCK\n+++ b/extension/threadpool/BUCK\n"
            f"@@ -{len(lines)},0 +{len(lines) + 1},2 @@\n"
            "+\n"
            '+cxx_library(name = "threadpool", srcs = [])\n'
        )
        head = apply_diff(base, diff)
        report = review_trees(base, head.tree, head.changes, cache=EvaluationCache(real_tree_cache))
    errors = [f for f in report.findings if f.rule == "buck-eval-error" and f.path == "extension/threadpool/BUCK"]
    assert errors and all("`threadpool` is defined twice" in f.message for f in errors)
    assert {f.line for f in errors} == {len(lines) + 2}


def test_buck2_warning_global_is_available_in_build_files_and_macros():
    # codegen.bzl calls buck2's `warning()` (4014cc613d); without it every package loading the
    # macro failed to evaluate in the model, though buck2 prints the warning and goes on.
    macro = 'def define():\n    warning("careful")\n    native.cxx_library(name = "a")\n'
    model = BuildModel(
        memory_tree({"pkg/BUCK": 'load(":defs.bzl", "define")\ndefine()\nwarning("here")\n', "pkg/defs.bzl": macro})
    )
    for cell in ("fbcode", "xplat", "oss"):
        result = model.cell(cell).packages["pkg"]
        assert result.error is None and [t.name for t in result.targets] == ["a"]
