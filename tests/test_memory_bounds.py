"""Nothing a review builds outlives it in the process (bench/busy_day.py measures the resident set across reviews).

A review's objects are freed by reference counting when the review is done, except what a
bounded cache keeps on purpose. These tests hold a weak reference to what must go and check
that it went.
"""

from __future__ import annotations

import gc
import weakref

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.evaluation import CellEvaluator
from bot.store.evaluations import EvaluationCache
from bot.store.memo import FactCache, reviewing
from bot.tree import Gitlink, Symlink, memory_tree

BUCKCONFIG = (
    "[repositories]\n  root = .\n  shim = shim\n  shim_et = shim_et\n"
    "[repository_aliases]\n  fbsource = shim_et\n  fbcode_macros = shim\n"
)
WRAPPER = "def _lib(**kwargs):\n    native.cxx_library(**kwargs)\nruntime = struct(cxx_library = _lib, is_oss = True)\n"
TARGETS = (
    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
    "def define_common_targets():\n"
    '    runtime.cxx_library(name = "lib", srcs = glob(["*.cpp"]), exported_headers = ["lib.h"])\n'
)


def _tree():
    return memory_tree(
        {
            ".buckconfig": BUCKCONFIG,
            "shim": Gitlink("1" * 40),
            "shim_et/tools": Symlink("../shim/tools"),
            "shim_et/xplat/executorch/build/runtime_wrapper.bzl": WRAPPER,
            "pkg/BUCK": 'load(":targets.bzl", "define_common_targets")\ndefine_common_targets()\n',
            "pkg/targets.bzl": TARGETS,
            "pkg/lib.cpp": "int f() { return 1; }\n",
            "pkg/lib.h": "int f();\n",
        }
    )


def test_an_evaluator_and_its_tree_are_freed_once_the_package_is_evaluated():
    """The host's callables live in the interpreter's heap, out of the collector's sight: were
    they bound to the evaluator, every evaluator (and the tree it read) would be kept."""
    tree = _tree()
    evaluator = CellEvaluator(tree, "oss")
    result = evaluator.evaluate_package("pkg", "pkg/BUCK")
    assert result.error is None
    assert [t.name for t in result.targets] == ["lib"]
    assert result.targets[0].attrs["srcs"] == ["lib.cpp"]
    gone_evaluator, gone_tree = weakref.ref(evaluator), weakref.ref(tree)
    del evaluator, tree
    gc.collect()
    assert gone_evaluator() is None
    assert gone_tree() is None


def test_a_whole_cell_evaluation_keeps_only_its_graph():
    tree = _tree()
    with reviewing(FactCache(None)):
        graph = evaluate_cell(tree, "oss", cache=EvaluationCache(None))
    assert sorted(graph.targets) == ["//pkg:lib"]
    gone_tree = weakref.ref(tree)
    del tree
    gc.collect()
    assert gone_tree() is None
    assert graph.targets["//pkg:lib"].attrs["exported_headers"] == ["lib.h"]
