"""Issue 17 part B on small real git repositories: label sources, OSS failures no CI job sees,
force-link consistency, export-dynamic in fbcode, CMake sources chosen by a variable.

Expected findings are written by hand from the invariants, as (rule, path, line, cell).
"""

from __future__ import annotations

import pytest

from bot.buck.targets import BuckTarget, CellGraph
from bot.facts import xref
from pr_check.review import review_repository


def _findings(report):
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


@pytest.fixture
def reviewed(tmp_path):
    """Build a fixture case as a real git repository and review its head against its base."""
    from fixtures.cases import build_case_repository

    def review(case: str):
        repo, base, head = build_case_repository(case, tmp_path / case)
        return review_repository(repo, base, head, cache_dir=tmp_path / case / "cache")

    return review


# ---------------------------------------------------------------------------------------------
# Sources and headers given as labels


def _target(cell: str, package: str, name: str, kind: str, **attrs) -> BuckTarget:
    return BuckTarget(cell, package, name, kind, attrs, f"{package}/BUCK", 1, 1)


def _graph(cell: str, *targets: BuckTarget) -> CellGraph:
    return CellGraph(cell, {}, {t.label: t for t in targets})


@pytest.mark.parametrize(
    ("cell", "label", "expected"),
    [
        # The internal cells mount the repository under //executorch/; their //other is elsewhere.
        ("fbcode", "//executorch/extension/pybindings:pybindings.cpp", "extension/pybindings/pybindings.cpp"),
        (
            "xplat",
            "fbsource//xplat/executorch/extension/pybindings:pybindings.cpp",
            "extension/pybindings/pybindings.cpp",
        ),
        ("fbcode", "//extension/pybindings:pybindings.cpp", None),
        # Open-source buck2 roots the repository at //, after the wrapper rewrote //executorch/.
        ("oss", "//extension/pybindings:pybindings.cpp", "extension/pybindings/pybindings.cpp"),
        ("oss", "//executorch/extension/pybindings:pybindings.cpp", None),
        # Same package, every cell; a generated output is no file of the repository.
        ("fbcode", ":pybindings.cpp", "extension/pybindings/pybindings.cpp"),
        ("oss", ":pybindings.cpp", "extension/pybindings/pybindings.cpp"),
        ("fbcode", ":gen[pybindings.cpp]", None),
    ],
)
def test_a_label_names_the_file_its_export_file_exports_in_the_cells_convention(cell, label, expected):
    exported = _target(cell, "extension/pybindings", "pybindings.cpp", "export_file")
    generated = _target(cell, "extension/pybindings", "gen", "genrule", out="pybindings.cpp")
    assert xref.label_file(label, "extension/pybindings", _graph(cell, exported, generated)) == expected


def test_an_export_file_with_src_names_that_file_and_other_rules_name_none():
    renamed = _target("oss", "runtime/core", "error_header", "export_file", src="error.h")
    group = _target("oss", "runtime/core", "headers", "filegroup", srcs=["error.h"])
    graph = _graph("oss", renamed, group)
    assert xref.label_file("//runtime/core:error_header", "kernels", graph) == "runtime/core/error.h"
    assert xref.label_file("//runtime/core:headers", "kernels", graph) is None
    assert xref.label_file("//runtime/core:undefined.h", "kernels", graph) is None
    user = _target(
        "oss",
        "kernels",
        "k",
        "cxx_library",
        srcs=["k.cpp", "//runtime/core:error_header"],
        exported_headers={"error.h": ":missing", "k.h": "k.h"},
    )
    assert xref.label_source_paths(user, graph) == ("runtime/core/error.h",)


def test_label_source_is_walked_for_its_includes(reviewed):
    # cuda_lib's only source is //executorch/extension/pybindings:pybindings.cpp (an export_file);
    # under use_cuda's define it includes pybindings_cuda.h, whose line 6 includes the allocator
    # header that no dep of cuda_lib provides. OSS cannot evaluate extension/cuda; fbcode says.
    report = reviewed("pybindings-cuda-allocator-label-source")
    assert _findings(report) == {("dep-undeclared-header", "extension/pybindings/pybindings_cuda.h", 6, "fbcode")}
    (finding,) = report.findings
    assert finding.target == "//extension/pybindings:cuda_lib"
    assert ("extension/pybindings/pybindings.cpp", 4) in {(e.path, e.line) for e in finding.evidence}


# ---------------------------------------------------------------------------------------------
# link_whole without supports_python_dlopen, by the file's convention


def test_link_whole_is_reported_where_every_other_force_linked_library_of_the_file_sets_the_flag(reviewed):
    # No Python extension links common_shims_slim; common_shims and delegate_handle, the other
    # force-linked libraries of the file, both set supports_python_dlopen. All three cells define
    # the targets; fbcode says first (one finding per target), with the fix on line 25.
    report = reviewed("aoti-shims-link-whole-inconsistent")
    assert _findings(report) == {("link-whole-without-python-dlopen", "backends/aoti/targets.bzl", 25, "fbcode")}
    (finding,) = report.findings
    assert "(2: `common_shims`, `delegate_handle`)" in finding.message
    assert {(e.path, e.line) for e in finding.evidence} == {
        ("backends/aoti/targets.bzl", 21),
        ("backends/aoti/targets.bzl", 4),
        ("backends/aoti/targets.bzl", 13),
    }
    assert finding.fix.replacement == "        link_whole = True,\n        supports_python_dlopen = True,"


# ---------------------------------------------------------------------------------------------
# OSS failures in packages no OSS CI command loads


def test_oss_failure_no_ci_command_loads_is_reported_at_minor_with_the_failing_command(reviewed):
    # use_cuda appends ("cuda", None, "cuda-lazy") to external_deps, which the OSS table does not
    # map: //extension/pybindings fails to evaluate in OSS. The CI queries //runtime/... only, so
    # no CI job sees it; it is reported at minor instead of dropped.
    report = reviewed("pybindings-cuda-oss-unloaded")
    assert _findings(report) == {("dep-unknown-external", "extension/pybindings/BUCK", 11, "oss")}
    (finding,) = report.findings
    assert finding.severity.label == "minor"
    assert "`buck2 uquery //extension/pybindings/...` fails" in finding.message
    assert "No CI command of the `oss` build loads `//extension/pybindings`" in finding.message
    assert report.stats.not_blamed.get("outside-build-scope", 0) == 0


def test_oss_failure_a_ci_command_loads_stays_a_blocker(reviewed):
    report = reviewed("pybindings-cuda-oss-queried")
    assert _findings(report) == {("dep-unknown-external", "extension/pybindings/BUCK", 11, "oss")}
    (finding,) = report.findings
    assert finding.severity.label == "blocker"
    assert "uquery" not in finding.message


# ---------------------------------------------------------------------------------------------
# fbcode binaries and tests that link the shims statically


def test_statically_linked_fbcode_test_of_the_shims_needs_export_dynamic(reviewed):
    # fbcode links runtime_shims as a shared library, so the library itself is not reported; the
    # new test links it into its executable (link_style = "static"), where the shims are not
    # exported without -Wl,--export-dynamic (CMake: aoti_cuda_shims PUBLIC). Fix on the test.
    report = reviewed("cuda-static-test-export-dynamic-missing")
    assert _findings(report) == {("link-export-dynamic-missing", "backends/cuda/runtime/test/BUCK", 4, "fbcode")}
    (finding,) = report.findings
    assert finding.target == "//backends/cuda/runtime/test:test_shims_link"
    assert finding.fix.replacement.splitlines()[-1] == '    linker_flags = ["-Wl,--export-dynamic"],'


# ---------------------------------------------------------------------------------------------
# CMake sources chosen by a cache variable


def test_buck_source_cmake_compiles_for_a_value_a_preset_sets_is_not_drift(reviewed):
    # CMake compiles runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp: posix by default, and
    # android where tools/cmake/preset/android.cmake sets the option; Buck adds default/android.cpp
    # for Android. Both builds compile it somewhere: no source-parity finding.
    assert _findings(reviewed("pal-source-set-by-preset")) == set()


def test_buck_source_for_a_value_nothing_sets_is_drift(reviewed):
    # The same Buck change where only the default (posix) is ever given, and the android value
    # appears in documentation alone: no CMake configuration compiles default/android.cpp.
    assert _findings(reviewed("pal-source-set-by-nothing")) == {
        ("source-parity", "runtime/platform/targets.bzl", 7, None)
    }


def test_a_file_chosen_by_a_variable_with_values_is_built_only_for_them():
    from bot.facts import pairing
    from bot.snapshot import BuildModel
    from bot.tree import memory_tree

    cmake = (
        'set(EXECUTORCH_PAL_DEFAULT "posix" CACHE STRING "")\n'
        "add_library(pal STATIC ${PROJECT_SOURCE_DIR}/runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp)\n"
        "foreach(op add mul)\n"  # a loop variable: its values are not assignments, any file may be named
        "  list(APPEND ops ${CMAKE_CURRENT_SOURCE_DIR}/kernels/${op}.cpp)\n"
        "endforeach()\n"
    )
    files = {
        "CMakeLists.txt": cmake,
        "runtime/platform/default/posix.cpp": "",
        "runtime/platform/default/android.cpp": "",
        "kernels/add.cpp": "",
    }
    alone = BuildModel(memory_tree(files))
    assert pairing.cmake_mentions(alone, "runtime/platform/default/posix.cpp") == ("CMakeLists.txt", 2)
    assert pairing.cmake_mentions(alone, "runtime/platform/default/android.cpp") is None
    assert pairing.cmake_mentions(alone, "kernels/add.cpp") == ("CMakeLists.txt", 4)
    scripted = BuildModel(
        memory_tree({**files, ".ci/scripts/android.sh": "cmake -DEXECUTORCH_PAL_DEFAULT=android ..\n"})
    )
    assert pairing.cmake_mentions(scripted, "runtime/platform/default/android.cpp") == ("CMakeLists.txt", 2)


def test_cache_values_come_from_defaults_presets_sets_and_scripts_not_docs():
    from bot.cmake.cache_values import cache_values, variable_assignments
    from bot.tree import memory_tree

    tree = memory_tree(
        {
            "tools/cmake/preset/default.cmake": (
                'define_overridable_option(EXECUTORCH_PAL_DEFAULT "Which PAL" STRING "posix")\n'
                'option(EXECUTORCH_BUILD_CUDA "CUDA" OFF)\n'
            ),
            "tools/cmake/preset/android.cmake": "set_overridable_option(EXECUTORCH_PAL_DEFAULT android)\n",
            "zephyr/CMakeLists.txt": 'set(EXECUTORCH_PAL_DEFAULT "zephyr")\nset(EXECUTORCH_PAL_DEFAULT ${OTHER})\n',
            "CMakePresets.json": (
                '{"configurePresets": [{"name": "cuda", "cacheVariables": '
                '{"EXECUTORCH_BUILD_CUDA": {"type": "BOOL", "value": "ON"}, "EXECUTORCH_PAL_DEFAULT": "posix"}}]}'
            ),
            ".ci/scripts/build-pico.sh": "cmake -DEXECUTORCH_PAL_DEFAULT:STRING=minimal \\\n  -DEXECUTORCH_BUILD_CUDA=$CUDA ..\n",
            "examples/pico/build_firmware.sh": "cmake -DEXECUTORCH_PAL_DEFAULT='minimal' ..\n# cmake -DEXECUTORCH_PAL_DEFAULT=commented ..\n",
            "docs/source/pal.md": "cmake -DEXECUTORCH_PAL_DEFAULT=tutorial ..\n",
            "examples/run.py": 'subprocess.run(["cmake", "-DEXECUTORCH_PAL_DEFAULT=python"])\n',
        }
    )
    assert cache_values(tree, "EXECUTORCH_PAL_DEFAULT") == {"posix", "android", "zephyr", "minimal"}
    assert cache_values(tree, "EXECUTORCH_BUILD_CUDA") == {"OFF", "ON"}  # `$CUDA` is no literal value
    hows = {(a.value, a.path, a.line, a.how) for a in variable_assignments(tree)["EXECUTORCH_PAL_DEFAULT"]}
    assert ("android", "tools/cmake/preset/android.cmake", 1, "preset") in hows
    assert ("minimal", ".ci/scripts/build-pico.sh", 1, "command line") in hows
    assert ("zephyr", "zephyr/CMakeLists.txt", 1, "set") in hows


def test_a_source_path_written_with_a_variable_names_one_existing_file_per_value():
    from bot.cmake.cache_values import sources_by_variable
    from bot.tree import memory_tree

    tree = memory_tree(
        {
            "tools/cmake/preset/default.cmake": (
                'set(EXECUTORCH_PAL_DEFAULT "posix" CACHE STRING "PAL")\n'
                "set(EXECUTORCH_PAL_DEFAULT_FILE_PATH\n"
                '    "${PROJECT_SOURCE_DIR}/runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp" CACHE STRING "")\n'
            ),
            "tools/cmake/preset/android.cmake": "set_overridable_option(EXECUTORCH_PAL_DEFAULT android)\n",
            "tools/cmake/preset/windows.cmake": "set_overridable_option(EXECUTORCH_PAL_DEFAULT windows)\n",  # no such file
            "backends/vk/CMakeLists.txt": "add_library(vk STATIC ${CMAKE_CURRENT_SOURCE_DIR}/${VK_IMPL}_impl.cpp impl/${VK_IMPL}.cpp)\n",
            "backends/vk/CMakePresets.json": "{}",
            "scripts/build_vk.sh": "cmake -DVK_IMPL=mesa ..\n",
            "backends/vk/mesa_impl.cpp": "",
            "backends/vk/impl/mesa.cpp": "",
            "runtime/platform/default/posix.cpp": "",
            "runtime/platform/default/android.cpp": "",
            "runtime/platform/default/minimal.cpp": "",
        }
    )
    found = sources_by_variable(tree)
    assert sorted(found) == [
        "backends/vk/impl/mesa.cpp",
        "backends/vk/mesa_impl.cpp",
        "runtime/platform/default/android.cpp",
        "runtime/platform/default/posix.cpp",
    ]
    android = found["runtime/platform/default/android.cpp"]
    assert (android.cmake_path, android.line) == ("tools/cmake/preset/default.cmake", 3)
    assert [(a.value, a.path) for a in android.assignments] == [("android", "tools/cmake/preset/android.cmake")]
