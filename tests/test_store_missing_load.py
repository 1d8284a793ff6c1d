"""A package's stored result depends on the files its loads looked for and did not find: a tree
that has the file must not get the failure of a tree that lacked it (#4372: `buck-eval-error` said
shim/build_defs/python_library.bzl was missing in a tree that has it, because an earlier review of a
tree without it stored the failure under the same build file and the same files read)."""

from __future__ import annotations

from bot.buck.cell_graphs import evaluate_cell
from bot.store.evaluations import EvaluationCache
from bot.store.memo import reviewing
from bot.tree import memory_tree

# The open-source cell of mid-2024: `fbcode_macros` is the in-tree shim/ directory.
BUCKCONFIG = "[buildfile]\n  name = TARGETS\n[repositories]\n  root = .\n  shim = shim\n[repository_aliases]\n  fbcode_macros = shim\n"
TARGETS = 'load("@fbcode_macros//build_defs:python_library.bzl", "python_library")\npython_library(name = "utils")\n'
MACRO = "def python_library(**kwargs):\n    native.python_library(**kwargs)\n"


def _evaluate(directory, files: dict[str, str]):
    cache = EvaluationCache(directory)
    with reviewing(cache.facts):
        return evaluate_cell(memory_tree(files), "oss", cache=cache)


def test_a_load_that_failed_for_a_missing_file_is_not_served_to_a_tree_that_has_the_file(tmp_path):
    without = {".buckconfig": BUCKCONFIG, "shim/BUCK": "", "utils/TARGETS": TARGETS}
    lacking = _evaluate(tmp_path, without)
    assert "python_library.bzl" in lacking.packages["utils"].error.message  # the first tree does fail

    having = _evaluate(tmp_path, {**without, "shim/build_defs/python_library.bzl": MACRO})
    assert having.packages["utils"].error is None
    assert "//utils:utils" in having.targets


def test_the_failure_is_still_served_from_the_store_to_a_tree_that_lacks_the_file_too(tmp_path):
    without = {".buckconfig": BUCKCONFIG, "shim/BUCK": "", "utils/TARGETS": TARGETS}
    _evaluate(tmp_path, without)
    again = _evaluate(tmp_path, {**without, "other/TARGETS": ""})  # another tree, same inputs for utils
    utils = again.packages["utils"]
    # Served from the store (not evaluated again), and the same failure: the file is still missing.
    assert utils.cached, "a tree with the same inputs for //utils evaluated it again"
    assert utils.error is not None and "python_library.bzl" in utils.error.message
