"""A CMake model is kept by what its evaluation read of the tree (bot/cmake/reads.py), so a tree
that answers every read the same way gets it without evaluating, and any other tree is evaluated."""

from __future__ import annotations

from bot.cmake.interpreter import evaluate_cmake, evaluate_cmake_reads
from bot.cmake.profiles import PROFILES
from bot.cmake.reads import literal_directory
from bot.facts import cmake_models
from bot.snapshot import BuildModel
from bot.store.disk import DiskStore
from bot.store.memo import FactCache, by_reads, reviewing
from bot.tree import memory_tree, with_files

ROOT = """cmake_minimum_required(VERSION 3.19)
project(demo)
file(GLOB _kernels "${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp")
add_library(kernels ${_kernels})
if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/extra/CMakeLists.txt")
  add_subdirectory(extra)
endif()
install(DIRECTORY include/ DESTINATION include FILES_MATCHING PATTERN "*.h")
"""
EXTRA = "add_library(extra extra.cpp)\n"

BASE = {
    "CMakeLists.txt": ROOT,
    "kernels/add.cpp": "int add();\n",
    "kernels/BUCK": "cxx_library(name = 'kernels', srcs = glob(['*.cpp']))\n",
    "include/demo.h": "#pragma once\n",
    "runtime/core.cpp": "int core();\n",
}
PROFILE = PROFILES["cpu-only"]


def _model(tree, store_dir, evaluations: list[str], label: str):
    """The model of `tree` through the store, noting in `evaluations` when it had to be evaluated."""

    def evaluate():
        evaluations.append(label)
        return evaluate_cmake_reads(tree, PROFILE)

    with reviewing(FactCache(DiskStore(store_dir))):
        return by_reads("cmake-model", ("cpu-only",), tree, evaluate)


def test_a_tree_answering_every_read_the_same_gets_the_stored_model(tmp_path):
    evaluations: list[str] = []
    base = memory_tree(BASE)
    first = _model(base, tmp_path, evaluations, "base")
    # Buck files (one beside the globbed sources), a source no glob or read reaches, a file in a
    # directory nothing lists: nothing the evaluation asked about changed.
    head = with_files(
        base,
        {
            "kernels/BUCK": "cxx_library(name = 'kernels', srcs = glob(['*.cpp']), visibility = ['PUBLIC'])\n",
            "runtime/core.cpp": "int core() { return 1; }\n",
            "runtime/BUCK": "cxx_library(name = 'core', srcs = ['core.cpp'])\n",
            "docs/README.md": "headers\n",
        },
    )
    again = _model(head, tmp_path, evaluations, "head")
    assert evaluations == ["base"]
    assert again == first == evaluate_cmake(head, PROFILE)
    assert again.targets["kernels"].sources == first.targets["kernels"].sources


def test_a_tree_that_answers_one_read_differently_is_evaluated(tmp_path):
    evaluations: list[str] = []
    base = memory_tree(BASE)
    _model(base, tmp_path, evaluations, "base")
    cases = {
        "a file the glob now matches": {"kernels/mul.cpp": "int mul();\n"},
        "a CMake file read": {"CMakeLists.txt": ROOT + "add_library(more kernels/add.cpp)\n"},
        "a path tested by if(EXISTS)": {"extra/CMakeLists.txt": EXTRA, "extra/extra.cpp": "int extra();\n"},
        # install(DIRECTORY) is asked for the directory's whole listing, a file its patterns skip too.
        "a file in a directory install(DIRECTORY) copies": {"include/README.md": "headers\n"},
    }
    for name, files in cases.items():
        head = with_files(base, files)
        model = _model(head, tmp_path, evaluations, name)
        assert evaluations[-1] == name, name
        assert model == evaluate_cmake(head, PROFILE), name
    # Each variant is kept: the base and every head are served from the store now.
    for name, files in [("base", {}), *cases.items()]:
        _model(with_files(base, files) if files else base, tmp_path, evaluations, "again: " + name)
    assert evaluations == ["base", *cases]


def test_a_review_serves_a_head_s_cmake_model_from_the_base_s_when_only_buck_files_changed(tmp_path):
    base = memory_tree(BASE)
    head = with_files(base, {"runtime/BUCK": "cxx_library(name = 'core', srcs = ['core.cpp'])\n"})
    with reviewing(FactCache(DiskStore(tmp_path))):
        stored = cmake_models.cmake_model(BuildModel(base), "cpu-only")
    with reviewing(FactCache(DiskStore(tmp_path))):
        served = cmake_models.cmake_model(BuildModel(head), "cpu-only")
    assert served == stored == evaluate_cmake(head, PROFILE)
    assert cmake_models.cmake_inputs(BuildModel(base)) != cmake_models.cmake_inputs(
        BuildModel(head)
    )  # the tree key differs


def test_a_glob_is_narrowed_to_the_literal_directories_before_its_first_wildcard():
    assert literal_directory("backends/cuda/runtime") == "backends/cuda/runtime/"
    assert literal_directory("backends/*/runtime") == "backends/"
    assert literal_directory("*") == ""
    assert literal_directory("") == ""
