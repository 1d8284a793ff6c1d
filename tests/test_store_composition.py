"""A cell in the store is a manifest of package results, each stored once under its inputs' digest:
trees that share packages share entries, and a cell is composed from them."""

from __future__ import annotations

import os
import pickle
import zlib
from typing import Any

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.targets import PackageResult
from bot.store.evaluations import EvaluationCache
from bot.store.memo import reviewing
from bot.tree import memory_tree

BUCKCONFIG = "[repositories]\n  root = .\n"


def _tree(**packages: str):
    files = {".buckconfig": BUCKCONFIG}
    files.update({f"{name}/BUCK": build for name, build in packages.items()})
    return memory_tree(files)


def _evaluate(directory, tree):
    """One review's evaluation of the xplat cell against the store in `directory`."""
    cache = EvaluationCache(directory)
    with reviewing(cache.facts):
        return evaluate_cell(tree, "xplat", cache=cache)


def _entries(directory) -> set[str]:
    return {name for _root, _dirs, names in os.walk(directory) for name in names if name.endswith(".pickle")}


def test_a_tree_that_changes_one_package_reuses_the_others_and_stores_only_what_is_new(tmp_path):
    first = _evaluate(tmp_path, _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b")\n'))
    assert {p: r.cached for p, r in first.packages.items()} == {"a": False, "b": False}
    stored = _entries(tmp_path)

    second = _evaluate(tmp_path, _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b2")\n'))
    assert {p: r.cached for p, r in second.packages.items()} == {"a": True, "b": False}
    assert sorted(second.targets) == ["//a:a", "//b:b2"]
    # b's result, b's index (a new build-file blob) and the new cell's manifest: nothing for a.
    assert len(_entries(tmp_path) - stored) == 3


def test_a_cell_is_composed_from_the_store_equal_to_its_evaluation(tmp_path):
    tree = _tree(a='cxx_library(name = "a", srcs = ["x.cpp"])\n', b='cxx_library(name = "b", deps = ["//a:a"])\n')
    evaluated = _evaluate(tmp_path, tree)
    composed = _evaluate(tmp_path, tree)
    assert all(r.cached for r in composed.packages.values())
    assert composed.targets == evaluated.targets
    assert composed.digest == evaluated.digest != ""
    assert composed.targets["//b:b"].attrs["deps"] == ["//a:a"]


def _packs(directory) -> list[str]:
    return [
        path
        for path in _paths(directory)
        if isinstance(_stored(path), tuple)
        and _stored(path)
        and all(isinstance(r, PackageResult) for r in _stored(path))
    ]


def test_a_cell_is_packed_when_first_composed_from_the_store_not_when_evaluated(tmp_path):
    tree = _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b")\n')
    evaluated = _evaluate(tmp_path, tree)
    assert _packs(tmp_path) == []  # a head reviewed once never pays for packing its results again
    composed = _evaluate(tmp_path, tree)
    assert composed.targets == evaluated.targets
    assert len(_packs(tmp_path)) == 1
    assert [r.package for r in _stored(_packs(tmp_path)[0])] == ["a", "b"]


def test_a_package_result_gone_from_the_store_means_evaluating_again_not_a_partial_cell(tmp_path):
    tree = _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b")\n')
    _evaluate(tmp_path, tree)
    _evaluate(tmp_path, tree)  # composed from the store: packed
    results = [path for path in _paths(tmp_path) if isinstance(_stored(path), PackageResult)]
    packs = [
        path
        for path in _paths(tmp_path)
        if isinstance(_stored(path), tuple)
        and _stored(path)
        and all(isinstance(r, PackageResult) for r in _stored(path))
    ]
    assert len(results) == 2 and len(packs) == 1
    for path in results + packs:  # evicted: the manifest and the indexes now name results that are gone
        os.unlink(path)
    again = _evaluate(tmp_path, tree)
    assert sorted(again.targets) == ["//a:a", "//b:b"]
    assert {p: r.cached for p, r in again.packages.items()} == {"a": False, "b": False}


def test_a_cell_whose_pack_was_evicted_is_composed_from_its_package_results_and_packed_again(tmp_path):
    tree = _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b")\n')
    evaluated = _evaluate(tmp_path, tree)
    _evaluate(tmp_path, tree)  # composed from the store: packed
    packs = [
        path
        for path in _paths(tmp_path)
        if isinstance(_stored(path), tuple)
        and _stored(path)
        and all(isinstance(r, PackageResult) for r in _stored(path))
    ]
    assert len(packs) == 1
    os.unlink(packs[0])
    composed = _evaluate(tmp_path, tree)
    assert composed.targets == evaluated.targets and all(r.cached for r in composed.packages.values())
    assert os.path.exists(packs[0])  # the same content, the same key: packed again


def _paths(directory) -> list[str]:
    return [os.path.join(root, name) for root, _dirs, names in os.walk(directory) for name in names]


def _stored(path: str) -> Any:
    with open(path, "rb") as handle:
        data = handle.read()
    return pickle.loads(zlib.decompress(data) if data[:1] == b"\x78" else data)


def test_base_and_head_composed_in_one_review_share_every_unchanged_package(tmp_path):
    base = _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b")\n')
    head = _tree(a='cxx_library(name = "a")\n', b='cxx_library(name = "b2")\n')
    _evaluate(tmp_path, base)
    _evaluate(tmp_path, head)
    cache = EvaluationCache(tmp_path)  # a warm review: both cells from the store
    with reviewing(cache.facts):
        base_graph = evaluate_cell(base, "xplat", cache=cache)
        head_graph = evaluate_cell(head, "xplat", cache=cache)
    assert head_graph.packages["a"] is base_graph.packages["a"]
    assert sorted(head_graph.targets) == ["//a:a", "//b:b2"] and sorted(base_graph.targets) == ["//a:a", "//b:b"]
