"""What the open-source CI's buck2 commands reach: patterns read from scripts, packages evaluated,
targets built transitively. Expectations written from buck2's target-pattern rules."""

from __future__ import annotations

from bot.buck.cell_graphs import evaluate_cell
from bot.facts.build_scope import EVERYTHING, TargetPattern, build_scope, ci_target_patterns
from bot.tree import memory_tree

SCRIPT = """#!/usr/bin/env bash
set -eux
buck2 query "//backends/apple/... + //backends/arm: + \\
//extension/flat_tensor:"
for op in "build" "test"; do
    buck2 $op //runtime/core/... \\
          //examples/runner:runner
done
echo "//not/a/buck/pattern"
"""


def test_patterns_are_read_from_ci_commands_only():
    tree = memory_tree({".ci/scripts/unittest-buck2.sh": SCRIPT, "docs/x.sh": "buck2 build //docs/...\n"})
    found = {(p.text, p.builds) for p in ci_target_patterns(tree)}
    assert found == {
        ("//backends/apple/...", False),
        ("//backends/arm:", False),
        ("//extension/flat_tensor:", False),
        ("//runtime/core/...", True),  # `buck2 $op` counts as a build: the larger scope
        ("//examples/runner:runner", True),
    }


def test_target_pattern_semantics():
    recursive, package, one = (TargetPattern(t, "s:1", True) for t in ("//a/...", "//a:", "//a:b"))
    assert recursive.names_package("a") and recursive.names_package("a/b") and not recursive.names_package("ab")
    assert package.names_package("a") and not package.names_package("a/b")
    assert one.names_target("//a:b") and not one.names_target("//a:c")
    assert TargetPattern("//a/b", "s:1", True).names_target("//a/b:b")  # `//a/b` means `//a/b:b`


def test_scope_is_the_transitive_closure_of_what_ci_builds():
    tree = memory_tree(
        {
            ".buckconfig": "[repositories]\n  root = .\n",
            ".ci/build.sh": "buck2 build //app:main\n",
            "app/BUCK": 'cxx_binary(name = "main", deps = ["//lib:core"])\ncxx_binary(name = "other", deps = ["//unbuilt:x"])\n',
            "lib/BUCK": 'cxx_library(name = "core")\ncxx_library(name = "sibling")\n',
            "unbuilt/BUCK": 'cxx_library(name = "x")\n',
        }
    )
    scope = build_scope(tree, evaluate_cell(tree, "oss"))
    assert scope.built_targets == frozenset({"//app:main", "//lib:core"})
    assert scope.evaluated_packages == frozenset({"app", "lib"})  # a dep's whole package is loaded
    assert scope.reaches("//lib") and not scope.reaches("//unbuilt") and not scope.reaches("//lib:sibling")


def test_no_ci_commands_means_no_scope():
    tree = memory_tree({".buckconfig": "[repositories]\n  root = .\n", "lib/BUCK": 'cxx_library(name = "core")\n'})
    assert build_scope(tree, evaluate_cell(tree, "oss")) is EVERYTHING
