"""The deps ExecuTorch's runtime wrapper adds to every C++ test, in every cell (#8607).

`runtime.cxx_test` is ExecuTorch's own macro (`shim_et/xplat/executorch/build/runtime_wrapper.bzl`,
`_cxx_test`; the internal cells load the same file from `fbsource//xplat/executorch/build`). Before
anything else it appends `//executorch/test/utils:utils` to the test's deps (`# Inject test
utils library`), so a test may include `executorch/test/utils/*.h` without declaring it. The
internal cells record `runtime.*` as given; they must add that dep as the wrapper does, whether or
not the open-source cell evaluates at the same revision (#8607 moved the wrapper and broke OSS).
"""

from __future__ import annotations

from pathlib import Path

from bot.buck.cell_graphs import evaluate_cell
from bot.tree import memory_tree
from fixtures.cases import commit_base_and_head
from pr_check.review import review_repository

WRAPPER_PATH = "shim_et/xplat/executorch/build/runtime_wrapper.bzl"
# The open-source copy, cut to what these tests use; `_cxx_test` as ExecuTorch writes it.
WRAPPER = (
    "def _cxx_library(**kwargs):\n"
    "    native.cxx_library(**kwargs)\n"
    "\n"
    "def _cxx_test(*args, **kwargs):\n"
    "    # Inject test utils library.\n"
    '    if "deps" not in kwargs:\n'
    '        kwargs["deps"] = []\n'
    '    kwargs["deps"].append("//executorch/test/utils:utils")\n'
    "    native.cxx_test(*args, **kwargs)\n"
    "\n"
    "runtime = struct(cxx_library = _cxx_library, cxx_test = _cxx_test, is_oss = True)\n"
)
LOAD = 'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
BINDING = 'load(":targets.bzl", "define_common_targets")\n\ndefine_common_targets()\n'

FILES = {
    ".buckconfig": (
        "[repositories]\n  root = .\n  shim_et = shim_et\n"
        "[repository_aliases]\n  fbsource = shim_et\n  fbcode = shim_et\n"
        "[buildfile]\n  name_v2 = TARGETS,BUCK\n"
    ),
    WRAPPER_PATH: WRAPPER,
    "test/utils/TARGETS": BINDING,
    "test/utils/BUCK": BINDING,
    "test/utils/targets.bzl": (
        LOAD + "def define_common_targets():\n"
        '    runtime.cxx_library(name = "utils", exported_headers = ["DeathTest.h"], visibility = ["PUBLIC"])\n'
    ),
    "test/utils/DeathTest.h": "#pragma once\n",
    "runtime/core/TARGETS": BINDING,
    "runtime/core/BUCK": BINDING,
    "runtime/core/targets.bzl": (
        LOAD + "def define_common_targets():\n"
        '    runtime.cxx_library(name = "core", exported_headers = ["error.h"], visibility = ["PUBLIC"])\n'
        '    runtime.cxx_library(name = "tag", exported_headers = ["tag.h"], visibility = ["PUBLIC"])\n'
    ),
    "runtime/core/error.h": "#pragma once\n",
    "runtime/core/tag.h": "#pragma once\n",
    "runtime/core/test/TARGETS": BINDING,
    "runtime/core/test/BUCK": BINDING,
    "runtime/core/test/targets.bzl": (
        LOAD + "def define_common_targets():\n"
        '    runtime.cxx_test(name = "error_test", srcs = ["error_test.cpp"], deps = ["//executorch/runtime/core:core"])\n'
        '    runtime.cxx_test(name = "bare_test", srcs = ["bare_test.cpp"])\n'
    ),
    "runtime/core/test/error_test.cpp": (
        "#include <executorch/runtime/core/error.h>\n#include <executorch/test/utils/DeathTest.h>\n"
    ),
    "runtime/core/test/bare_test.cpp": "#include <executorch/test/utils/DeathTest.h>\n",
}


def _test_deps(cell: str) -> dict[str, tuple[str, ...]]:
    graph = evaluate_cell(memory_tree(FILES), cell)
    return {
        label: target.labels("deps")
        for label, target in graph.targets.items()
        if label.startswith("//runtime/core/test")
    }


def test_every_cell_gives_a_cxx_test_the_test_utils_the_wrapper_injects():
    # Written by hand from `_cxx_test`: the test's own deps, then //executorch/test/utils:utils
    # (normalized: the internal cells mount the repository at //executorch).
    expected = {
        "//runtime/core/test:error_test": ("//runtime/core:core", "//test/utils:utils"),
        "//runtime/core/test:bare_test": ("//test/utils:utils",),
    }
    for cell in ("fbcode", "xplat", "oss"):
        assert _test_deps(cell) == expected, cell


def test_the_injected_dep_does_not_leak_into_libraries():
    graph = evaluate_cell(memory_tree(FILES), "fbcode")
    assert graph.targets["//runtime/core:core"].labels("deps") == ()


def _repository(tmp_path: Path, head_changes: dict[str, str | None]) -> tuple[Path, str, str]:
    repo = tmp_path / "executorch"
    base, head = commit_base_and_head(repo, FILES, head_changes)
    return repo, base, head


def test_a_change_that_breaks_the_open_source_wrapper_leaves_fbcode_tests_their_injected_dep(tmp_path):
    # #8607's shape: the wrapper leaves shim_et/ (moved, in ghstack steps), so every package loading
    # it fails in OSS, at head only. The tests' includes of test/utils are as legal in fbcode as
    # before: the internal wrapper still injects the dep. What the change does break stays: the OSS
    # evaluation errors, and an include of a header whose owner no test declares (tag.h).
    repo, base, head = _repository(
        tmp_path,
        {
            WRAPPER_PATH: None,
            "runtime/core/test/bare_test.cpp": (
                "#include <executorch/test/utils/DeathTest.h>\n#include <executorch/runtime/core/tag.h>\n"
            ),
        },
    )
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    headers = [f for f in report.findings if f.rule == "dep-undeclared-header"]
    # One gap in both internal cells: one finding, placed in the first cell, naming both.
    assert [(f.cell, f.path, f.line) for f in headers] == [("fbcode", "runtime/core/test/bare_test.cpp", 2)]
    assert "`//runtime/core:tag`" in headers[0].message and "`fbcode`, `xplat`" in headers[0].message
    broken = {f.path for f in report.findings if f.rule == "buck-eval-error" and f.cell == "oss"}
    assert broken == {"runtime/core/TARGETS", "runtime/core/test/TARGETS", "test/utils/TARGETS"}
