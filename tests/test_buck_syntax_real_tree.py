"""The syntax layer on ExecuTorch's own build files (mirror present): it reads every file the
interpreter reads, finds every evaluated target's call at its call-site line, and an edit made
through it changes exactly what it says."""

from __future__ import annotations

import collections
import posixpath

import pytest

from bot.buck import edits
from bot.buck.evaluation import CellEvaluator
from bot.buck.packages import find_packages, load_buckconfig
from bot.buck.syntax import parse_starlark
from bot.repo import GitRepository
from bot.tree import FileTree, with_files

PACKAGES = ("backends/cuda/runtime", "backends/aoti", "extension/tensor", "runtime/core")
PROBE = "//pr_check/probe:probe"  # a label no target has: only the edit can put it in a deps list


@pytest.fixture(scope="module")
def main_tree(executorch_mirror) -> FileTree:
    repository = GitRepository(executorch_mirror)
    return repository.tree(repository.resolve("refs/heads/main"))


def _with_file(tree: FileTree, path: str, text: str) -> FileTree:
    return with_files(tree, {path: text})


def _evaluate(tree: FileTree, packages: dict[str, str]):
    evaluator = CellEvaluator(tree, "fbcode", load_buckconfig(tree))
    return {package: evaluator.evaluate_package(package, packages[package]) for package in PACKAGES}


def test_every_build_file_the_interpreter_parses_has_no_tree_sitter_error(main_tree):
    paths = [p for p in main_tree.paths() if posixpath.basename(p) in ("BUCK", "TARGETS") or p.endswith(".bzl")]
    assert len(paths) > 300
    broken = {}
    for path in paths:
        syntax = parse_starlark(main_tree.read_text(path) or "")
        if syntax.errors or syntax.recovered:
            broken[path] = (syntax.errors, syntax.recovered)
    assert broken == {}


def test_every_target_is_found_at_its_call_site_and_a_dep_added_changes_only_it(main_tree):
    packages = find_packages(main_tree, load_buckconfig(main_tree), "fbcode")
    results = _evaluate(main_tree, packages)
    targets = [t for package in PACKAGES for t in results[package].targets]
    assert all(results[p].error is None for p in PACKAGES) and len(targets) > 20

    missing = [t.label for t in targets if parse_starlark(main_tree.read_text(t.path) or "").call_at(t.line) is None]
    assert missing == []

    # Calls that write a literal `deps` list: add one label to it. Every target the call defines
    # (the wrapper's `_static` twin too) gains that label, in whatever form the macro gives it.
    by_site = collections.defaultdict(list)
    for target in targets:
        by_site[(target.path, target.line)].append(target)
    edited_sites = 0
    for (path, line), defined in sorted(by_site.items()):
        text = main_tree.read_text(path) or ""
        deps = parse_starlark(text).call_at(line).keyword("deps")
        if deps is None or not deps.value_list or not all(t.attr("deps") for t in defined):
            continue
        edited = edits.add_list_element(text, deps.value_list, PROBE)
        assert parse_starlark(edited).errors == ()
        _assert_only_these_gain_the_probe(results, _evaluate(_with_file(main_tree, path, edited), packages), defined)
        edited_sites += 1
        if edited_sites == 3:
            break
    assert edited_sites == 3


def _assert_only_these_gain_the_probe(before_results, after_results, defined) -> None:
    before = {t.label: t for p in PACKAGES for t in before_results[p].targets}
    after = {t.label: t for p in PACKAGES for t in after_results[p].targets}
    assert set(after) == set(before)
    changed = {label for label in after if after[label].attrs != before[label].attrs}
    assert changed == {t.label for t in defined}
    for target in defined:
        old, new = before[target.label].attrs, after[target.label].attrs
        gained = collections.Counter(new["deps"]) - collections.Counter(old["deps"])
        assert (
            list(gained) == [label for label in gained if "pr_check/probe:probe" in label] and sum(gained.values()) == 1
        )
        assert collections.Counter(old["deps"]) - collections.Counter(new["deps"]) == collections.Counter()
        assert {k: v for k, v in new.items() if k != "deps"} == {k: v for k, v in old.items() if k != "deps"}
