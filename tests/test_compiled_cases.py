"""The compiled tier on fixture pull requests, one bad and one good case per class of issue 33.

Each bad case fails with the compiler's (or the linker's) own words in the configuration that
breaks and is quiet in the ones that do not; its clean twin is quiet everywhere. Expectations are
written by hand from the invariant: which configurations have the macro, the CUDA headers, the
source in their list.
"""

from __future__ import annotations

import pytest

from bot.facts.compiled import compiled_review
from bot.store.disk import DiskStore
from bot.store.memo import FactCache, reviewing
from bot.toolchain.runner import discover, runs_so_far
from pr_check.review import review_repository

pytestmark = pytest.mark.skipif(discover() is None, reason="no C++ compiler on this machine")

TIER = frozenset({"compile-error-new", "link-undefined-symbol", "link-duplicate-definition"})
CPU_ONLY = ("xplat android-arm64", "xplat iphoneos-arm64", "xplat linux-x86_64", "oss linux-x86_64")
CUDA = ("fbcode fbcode-linux-x86_64-cuda", "xplat linux-x86_64-cuda")
EVERY_BUCK = frozenset(CPU_ONLY + CUDA)


def _tier(report):
    return [f for f in report.findings if f.rule in TIER]


def _configurations(message: str) -> frozenset[str]:
    named = message.split(" in `", 1)[1].split(":", 1)[0].split(";", 1)[0]
    return frozenset(part.strip(" `") for part in named.split(",") if part.strip(" `"))


def _review(case_repo, tmp_path, case):
    repo, base, head = case_repo(case)
    return review_repository(repo, base, head, cache_dir=tmp_path / "cache", compiled=True)


def test_a_cuda_call_outside_its_ifdef_fails_on_every_cpu_only_platform(case_repo, tmp_path):
    (finding,) = _tier(_review(case_repo, tmp_path, "compiled-cuda-call-outside-ifdef"))
    assert (finding.rule, finding.path, finding.line, finding.severity.label) == (
        "compile-error-new",
        "extension/sync/sync.cpp",
        8,
        "blocker",
    )
    assert "'cudaError_t' was not declared in this scope" in finding.message
    # Quiet where the platform has CUDA: the macro is set and the toolkit's headers are given.
    assert _configurations(finding.message) == frozenset(CPU_ONLY)
    assert "g++ -std=c++17 -fsyntax-only -I. executorch/extension/sync/sync.cpp" in finding.message


def test_a_cuda_call_kept_under_its_ifdef_compiles_everywhere(case_repo, tmp_path):
    assert _tier(_review(case_repo, tmp_path, "compiled-cuda-call-inside-ifdef")) == []


def test_a_function_moved_to_a_source_the_cmake_list_lacks_is_undefined_at_the_cmake_link(case_repo, tmp_path):
    (finding,) = _tier(_review(case_repo, tmp_path, "compiled-function-moved-list-lacks"))
    assert (finding.rule, finding.path, finding.line) == ("link-undefined-symbol", "kernels/math/CMakeLists.txt", 3)
    assert "undefined reference to `et_twice(int)'" in finding.message
    # Buck's list names twice.cpp: every Buck configuration links; the CMake profiles do not.
    assert _configurations(finding.message) == frozenset({"cmake linux-gcc-cuda", "cmake cpu-only"})


def test_a_function_moved_to_a_source_both_lists_name_links(case_repo, tmp_path):
    assert _tier(_review(case_repo, tmp_path, "compiled-function-moved-list-has")) == []


def test_two_runtime_variants_in_one_link_define_the_registry_twice(case_repo, tmp_path):
    (finding,) = _tier(_review(case_repo, tmp_path, "compiled-runtime-variants-both-linked"))
    assert (finding.rule, finding.path, finding.line) == ("link-duplicate-definition", "examples/runner/targets.bzl", 4)
    assert "multiple definition of `et_register_kernel(char const*)'" in finding.message
    assert _configurations(finding.message) == EVERY_BUCK


def test_one_runtime_variant_links(case_repo, tmp_path):
    assert _tier(_review(case_repo, tmp_path, "compiled-runtime-variant-one-linked")) == []


def test_an_implementation_macro_no_source_defines_leaves_the_function_undefined(case_repo, tmp_path):
    (finding,) = _tier(_review(case_repo, tmp_path, "compiled-header-only-macro-undefined"))
    assert (finding.rule, finding.path, finding.line) == ("link-undefined-symbol", "extension/json/targets.bzl", 4)
    assert "undefined reference to `et_json_depth(char const*)'" in finding.message
    assert _configurations(finding.message) == EVERY_BUCK


def test_an_implementation_macro_renamed_with_its_definer_links(case_repo, tmp_path):
    assert _tier(_review(case_repo, tmp_path, "compiled-header-only-macro-defined")) == []


def test_a_source_only_an_unset_option_builds_is_compiled_in_a_derived_configuration(case_repo, tmp_path):
    (finding,) = _tier(_review(case_repo, tmp_path, "compiled-option-only-source-broken"))
    assert (finding.rule, finding.path, finding.line) == (
        "compile-error-new",
        "extension/evalue_util/print_evalue.cpp",
        9,
    )
    assert "'et_format_scalar' was not declared in this scope" in finding.message
    # No profile turns the option on: a derived configuration, so major rather than blocker.
    assert finding.severity.label == "major"
    assert "EXECUTORCH_BUILD_EXTENSION_EVALUE_UTIL=ON (no profile turns this on)" in finding.message


def test_a_source_only_an_unset_option_builds_changed_correctly_is_quiet(case_repo, tmp_path):
    assert _tier(_review(case_repo, tmp_path, "compiled-option-only-source-fine")) == []


def test_the_tier_is_off_unless_asked_and_the_review_says_nothing_of_it(case_repo, tmp_path):
    repo, base, head = case_repo("compiled-cuda-call-outside-ifdef")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert _tier(report) == []


def test_a_warm_review_runs_no_compiler(case_repo, tmp_path):
    from bot.diff import parse_diff
    from bot.repo import GitRepository
    from bot.snapshot import BuildModel, Snapshot

    repo, base, head = case_repo("compiled-runtime-variants-both-linked")
    store = DiskStore(tmp_path / "store")
    ran = []
    for _ in range(2):
        with GitRepository(repo) as git, reviewing(FactCache(store)):
            snap = Snapshot(BuildModel(git.tree(base)), BuildModel(git.tree(head)), parse_diff(git.diff(base, head)))
            before = runs_so_far()
            review = compiled_review(snap)
            ran.append(runs_so_far() - before)
            assert [f.problem.symbol for f in review.links] == ["et_register_kernel(char const*)"]
    assert ran[0] > 0 and ran[1] == 0


def test_a_standard_include_the_host_library_lacks_is_not_verified_never_a_finding():
    # std::runtime_error without <stdexcept>: libstdc++ 12 rejects it, other standard libraries
    # pull <stdexcept> in through <string> (ExecuTorch landed such code, fbba1cbc54): which
    # standard headers arrive transitively is the configuration's library's choice, not the host's.
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    buck = 'cxx_library(name = "m", srcs = ["m.cpp"], visibility = ["PUBLIC"])\n'
    base = {"m/BUCK": buck, "m/m.cpp": "#include <string>\nint f(const std::string& s) { return s.size(); }\n"}
    head = {**base, "m/m.cpp": "#include <string>\nvoid f(const std::string& s) { throw std::runtime_error(s); }\n"}
    lines = frozenset({1, 2})
    change = FileChange("m/m.cpp", "m/m.cpp", "modified", added=lines, commentable=lines, hunks=((1, 2),))
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    assert review.failures == ()
    assert any("standard library" in u.reason and u.source == "m/m.cpp" for u in review.unverified)


def test_a_missing_standard_include_fails_in_a_gnu_profile_and_is_not_verified_in_a_buck_cell():
    # std::tie without <tuple> (ExecuTorch's op_index.cpp, b6c2f01264, fixed by d0d664dadc): a GCC
    # profile on Linux builds with the host's libstdc++, so its error is the build's; a Buck cell's
    # (clang, its own library, Apple, Android) may pull <tuple> in through <utility>.
    from pathlib import Path

    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    root = Path(__file__).resolve().parents[1] / "fixtures/bases/compiled-moved"
    base = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}
    source = "kernels/math/add.cpp"
    head = {
        **base,
        source: "#include <utility>\n#include <executorch/kernels/math/math.h>\n\n"
        "int et_add(int a, int b) {\n  int x, y;\n  std::tie(x, y) = std::make_pair(a, b);\n  return x + y;\n}\n\n"
        "int et_twice(int a) {\n  return et_add(a, a);\n}\n",
    }
    lines = frozenset(range(1, 13))
    change = FileChange(source, source, "modified", added=lines, commentable=lines, hunks=((1, 12),))
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    (failure,) = review.failures
    assert failure.source == source and "'tie' is not a member of 'std'" in failure.text
    assert {c.name for c in failure.configurations} == {"cmake cpu-only", "cmake linux-gcc-cuda"}  # GCC on Linux
    (unverified,) = [u for u in review.unverified if u.source == source]
    assert "standard library" in unverified.reason
    named = set(unverified.configuration.split(", "))  # the configurations, as the note names them
    assert named >= {"xplat linux-x86_64", "xplat iphoneos-arm64", "xplat android-arm64"}
    assert not any(name.startswith("cmake ") for name in named)


def test_a_header_the_tree_names_but_does_not_hold_makes_the_unit_not_verified():
    # A third-party target's exported headers lie in a submodule the tree does not hold (pthreadpool
    # under backends/xnnpack/third-party in ExecuTorch, #9189): the header tree must not stand an
    # empty file in for them, or the compile goes on to "'pool_t' does not name a type", a false
    # compile failure. Missing, the header makes the unit not verified.
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    base = {
        "third/BUCK": 'cxx_library(name = "pool", exported_headers = ["pool.h"], visibility = ["PUBLIC"])\n',
        "m/BUCK": 'cxx_library(name = "m", srcs = ["m.cpp"], deps = ["//third:pool"], visibility = ["PUBLIC"])\n',
        "m/m.cpp": "int f() { return 0; }\n",
    }
    head = {**base, "m/m.cpp": "#include <executorch/third/pool.h>\npool_t make();\nint f() { return 0; }\n"}
    lines = frozenset({1, 2, 3})
    change = FileChange("m/m.cpp", "m/m.cpp", "modified", added=lines, commentable=lines, hunks=((1, 3),))
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    assert review.failures == ()
    assert any(u.source == "m/m.cpp" and "pool.h" in u.reason for u in review.unverified)


def test_a_header_reached_through_the_targets_include_directories_compiles():
    # buck2 gives a target its package-relative `include_directories` as -I roots: ExecuTorch's
    # Vulkan gpuinfo tool includes "app.h" from its include/ folder so (#4432); without them the
    # tier reported "app.h: No such file or directory", a false compile failure.
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    buck = (
        'cxx_library(name = "tool", srcs = ["src/main.cpp"], headers = glob(["**/*.h"]), '
        'include_directories = ["include"], visibility = ["PUBLIC"])\n'
    )
    base = {"tool/BUCK": buck, "tool/include/app.h": "int app();\n", "tool/src/main.cpp": "int f() { return 0; }\n"}
    head = {**base, "tool/src/main.cpp": '#include "app.h"\nint f() { return app(); }\n'}
    lines = frozenset({1, 2})
    change = FileChange(
        "tool/src/main.cpp", "tool/src/main.cpp", "modified", added=lines, commentable=lines, hunks=((1, 2),)
    )
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    assert review.failures == ()
    assert review.compiles > 0  # it was compiled, not set aside


def test_an_error_behind_a_macro_a_dep_outside_the_tree_may_export_is_not_verified():
    # ExecuTorch's Vulkan graph is gated on USE_VULKAN_API, which ATen's Vulkan target (another
    # repository's) exports (#2366): compiled without it, every use of ComputeGraph fails. The tree
    # cannot say what such a dep exports, so the unit is not verified, never a compile failure.
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    buck = (
        'cxx_library(name = "g", srcs = ["g.cpp"], exported_headers = ["graph.h"], '
        'exported_deps = ["fbsource//xplat/caffe2:aten_vulkan"], visibility = ["PUBLIC"])\n'
    )
    graph_h = "#pragma once\n#ifdef USE_VULKAN_API\nstruct ComputeGraph {};\n#endif\n"
    base = {"v/BUCK": buck, "v/graph.h": graph_h, "v/g.cpp": "int f() { return 0; }\n"}
    head = {**base, "v/g.cpp": '#include "graph.h"\nvoid add(ComputeGraph& graph);\nint f() { return 0; }\n'}
    lines = frozenset({1, 2, 3})
    change = FileChange("v/g.cpp", "v/g.cpp", "modified", added=lines, commentable=lines, hunks=((1, 3),))
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    assert review.failures == ()
    assert any(u.source == "v/g.cpp" and "outside the tree" in u.reason for u in review.unverified)


def _option_only_tree(option: str, directory: str, guard: str, source: str) -> dict[str, str]:
    # ExecuTorch's root CMakeLists.txt of 2023-24 (8c5aaf0dcd): CoreML only under an iOS toolchain
    # file, which every Apple build passes (CMakePresets' macos and ios presets, build_apple_frameworks.sh).
    root = (
        "cmake_minimum_required(VERSION 3.19)\nproject(et)\n"
        f'option({option} "" OFF)\n'
        f"if({option})\n"
        f"  if({guard})\n"
        f"    add_subdirectory({directory})\n"
        "  else()\n"
        '    message(FATAL_ERROR "Building CoreML delegate requires iOS toolchain")\n'
        "  endif()\n"
        "endif()\n"
    )
    return {
        "CMakeLists.txt": root,
        f"{directory}/CMakeLists.txt": "add_library(delegate runtime/util/json_util.cpp)\n",
        f"{directory}/runtime/util/json_util.cpp": source,
    }


_IOS_TOOLCHAIN = 'CMAKE_TOOLCHAIN_FILE MATCHES ".*(iOS\\.)|(ios\\.toolchain\\.)cmake$"'


@pytest.mark.parametrize(
    ("option", "directory", "guard", "configuration"),
    [
        # CoreML's sources build only on Apple, with the iOS toolchain file: a derived configuration
        # on the Linux profile (no toolchain file, no __APPLE__) reaches the FATAL_ERROR and compiles
        # none of them, so an error there went unseen (#1145's json_util.cpp was "not verified": no
        # target in any configuration compiled it). The backend's own profile stands for it instead.
        (
            "EXECUTORCH_BUILD_COREML",
            "backends/apple/coreml",
            _IOS_TOOLCHAIN,
            "cmake backend-apple with EXECUTORCH_BUILD_COREML=ON (no profile turns this on)",
        ),
        # XNNPACK builds on Linux too (and in the Android profile): the base profile stays.
        (
            "EXECUTORCH_BUILD_XNNPACK",
            "backends/xnnpack",
            "NOT WIN32",
            "cmake cpu-only with EXECUTORCH_BUILD_XNNPACK=ON (no profile turns this on)",
        ),
    ],
)
def test_a_source_only_an_option_builds_is_compiled_on_the_platform_that_builds_it(
    option, directory, guard, configuration
):
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree

    source = f"{directory}/runtime/util/json_util.cpp"
    base = _option_only_tree(option, directory, guard, "int depth() { return 0; }\n")
    head = _option_only_tree(option, directory, guard, "int depth() { return et_json_depth(); }\n")
    lines = frozenset({1})
    change = FileChange(source, source, "modified", added=lines, commentable=lines, hunks=((1, 1),))
    with reviewing(FactCache(None)):
        review = compiled_review(
            Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((change,)))
        )
    (failure,) = review.failures
    assert failure.source == source and "'et_json_depth' was not declared in this scope" in failure.text
    assert {c.name for c in failure.configurations} == {configuration}
