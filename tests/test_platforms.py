"""Configurations: select() resolved per platform, compatibility and its spread through deps.

The tree is a small real git repository; every expectation follows from buck2's rules as the
module docstring of bot/buck/platforms.py states them, written by hand for this tree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.buck import platforms
from bot.buck.cell_graphs import evaluate_cell
from bot.buck.cells import ANDROID_ARM64, LINUX_X86_64, LINUX_X86_64_CUDA, cell_named
from bot.buck.targets import Platform, Select, chosen_branch, resolve, setting_constraints
from bot.config import parse_config
from bot.errors import ConfigError
from bot.facts import linkage, xref
from bot.facts.header_deps import DependencyIndex, DependencyTable, configured_views
from bot.repo import GitRepository
from bot.snapshot import BuildModel
from bot.tree import memory_tree

CUDA_DEPS = ("cuda", "cuda-lazy", "cudart")

BUCK = """load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")
load(":targets.bzl", "define_common_targets")
non_fbcode_target(_kind = define_common_targets,)
"""

TARGETS_BZL = """load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")

def define_common_targets():
    runtime.cxx_library(
        name = "cuda_guard",
        srcs = ["guard.cu"],
        compatible_with = ["ovr_config//cuda:has_cuda"],
        define_static_target = False,
    )
    runtime.cxx_library(
        name = "storage",
        srcs = ["storage.cpp"],
        exported_deps = [":core"] + select({
            "ovr_config//cuda:has_cuda": [":cuda_guard"],
            "DEFAULT": [],
        }),
        external_deps = select({"ovr_config//cuda:has_cuda": [("cuda", None, "cuda-lazy")], "DEFAULT": []}),
        define_static_target = False,
    )
    runtime.cxx_library(name = "core", srcs = ["core.cpp"], define_static_target = False)
    runtime.cxx_library(
        name = "tensor",
        srcs = ["tensor.cpp"],
        deps = [":storage"],
        define_static_target = False,
    )
    runtime.cxx_library(
        name = "uses_guard",
        srcs = ["uses.cpp"],
        deps = [":cuda_guard"],
        define_static_target = False,
    )
    runtime.cxx_library(
        name = "says_android",
        srcs = ["android.cpp"],
        compatible_with = ["ovr_config//os:android"],
        deps = [":uses_guard"],
        define_static_target = False,
    )
    runtime.cxx_library(
        name = "mapped",
        srcs = ["mapped.cpp"],
        deps = select_map(
            [":core"] + select({"ovr_config//cuda:has_cuda": [":cuda_guard"], "DEFAULT": [":tensor"]}),
            lambda labels: [label + "_static" for label in labels],
        ),
        define_static_target = False,
    )
    runtime.cxx_library(
        name = "arm_only",
        srcs = ["arm.cpp"],
        target_compatible_with = select({"ovr_config//os:android-arm64": [], "DEFAULT": ["ovr_config//cpu:arm64"]}),
        define_static_target = False,
    )
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """The xplat graph of a one-commit git repository holding the package above."""
    root: Path = tmp_path_factory.mktemp("platforms-repo")
    (root / "slim").mkdir()
    (root / ".buckconfig").write_text("[repositories]\n  root = .\n")
    (root / "slim" / "BUCK").write_text(BUCK)
    (root / "slim" / "targets.bzl").write_text(TARGETS_BZL)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "slim"], check=True)
    with GitRepository(root) as repository:
        graph = evaluate_cell(repository.tree("HEAD"), "xplat")
    assert graph.errors == ()
    return graph


def test_a_dep_under_select_has_cuda_is_absent_on_cpu_and_present_with_cuda(graph):
    storage = graph.targets["//slim:storage"]
    assert storage.labels("exported_deps", ANDROID_ARM64) == ("//slim:core",)
    assert storage.labels("exported_deps", LINUX_X86_64) == ("//slim:core",)
    assert storage.labels("exported_deps", LINUX_X86_64_CUDA) == ("//slim:core", "//slim:cuda_guard")
    # The any-configuration view keeps every branch (what "CUDA in some configuration" asks).
    assert set(storage.labels("exported_deps")) == {"//slim:core", "//slim:cuda_guard"}


def test_a_table_configured_from_the_any_configuration_one_equals_one_computed_for_the_platform(graph):
    # DependencyTable.on re-reads only the targets whose deps hold a select(): storage (select) and
    # mapped (select_map over a select) differ by platform, the rest are shared with the any view.
    everywhere = DependencyTable.of(graph)
    assert everywhere.configurable == {"//slim:storage", "//slim:mapped"}
    for platform in (ANDROID_ARM64, LINUX_X86_64, LINUX_X86_64_CUDA):
        assert everywhere.on(graph, platform) == DependencyTable.of(graph, platform)
    assert everywhere.on(graph, ANDROID_ARM64).exported["//slim:storage"] == ("//slim:core",)
    assert everywhere.on(graph, LINUX_X86_64_CUDA).deps["//slim:mapped"] == (
        "//slim:core_static",
        "//slim:cuda_guard_static",
    )


def test_the_headers_a_target_sees_are_a_fact_of_the_platform():
    # tensor -> storage -exported-> cuda_guard under select(has_cuda): cuda_guard's headers reach
    # tensor with CUDA only. uses_guard needs cuda_guard everywhere, so it builds with CUDA only.
    model = BuildModel(
        memory_tree({".buckconfig": "[repositories]\n  root = .\n", "slim/BUCK": BUCK, "slim/targets.bzl": TARGETS_BZL})
    )
    graph = model.cell("xplat")
    index = configured_views(model, "xplat", DependencyIndex.build(graph, DependencyTable.of(graph), None, frozenset()))
    assert index.reaches("//slim:tensor", ["//slim:cuda_guard"])  # in some configuration
    views = {view.platform.name: view.index for view in index.configured}
    assert set(views) == {"android-arm64", "iphoneos-arm64", "linux-x86_64", "linux-x86_64-cuda"}
    assert views["linux-x86_64-cuda"].reaches("//slim:tensor", ["//slim:cuda_guard"])
    for cpu_only in ("android-arm64", "iphoneos-arm64", "linux-x86_64"):
        assert not views[cpu_only].reaches("//slim:tensor", ["//slim:cuda_guard"])
    unreached = index.unreached_on("//slim:tensor", ["//slim:cuda_guard"])
    assert [view.platform.name for view in unreached] == ["android-arm64", "iphoneos-arm64", "linux-x86_64"]
    # core is reached the same way everywhere; uses_guard does not build on the CPU-only platforms.
    assert index.unreached_on("//slim:tensor", ["//slim:core"]) == ()
    assert index.unreached_on("//slim:uses_guard", ["//slim:cuda_guard"]) == ()


def test_the_open_source_twin_is_configured_for_the_same_platform():
    # An internal cell folds in the OSS twin's deps (the wrapper's); on a CPU-only platform the
    # twin's has_cuda branch is not taken either, so tensor does not see the guard there.
    model = BuildModel(
        memory_tree(
            {
                ".buckconfig": "[repositories]\n  root = .\n",
                "slim/BUCK": (
                    'cxx_library(name = "guard", exported_headers = ["guard.h"])\n'
                    'cxx_library(name = "storage", exported_deps = select({"ovr_config//cuda:has_cuda": [":guard"], '
                    '"DEFAULT": []}))\n'
                    'cxx_library(name = "tensor", srcs = ["tensor.cpp"], deps = [":storage"])\n'
                ),
            }
        )
    )
    graph = model.cell("xplat")
    twin = DependencyTable.of(model.cell("oss"))
    index = configured_views(model, "xplat", DependencyIndex.build(graph, DependencyTable.of(graph), twin, frozenset()))
    unreached = index.unreached_on("//slim:tensor", ["//slim:guard"])
    assert [view.platform.name for view in unreached] == ["android-arm64", "iphoneos-arm64", "linux-x86_64"]


def test_select_map_is_resolved_per_platform(graph):
    mapped = graph.targets["//slim:mapped"]
    assert mapped.labels("deps", LINUX_X86_64) == ("//slim:core_static", "//slim:tensor_static")
    assert mapped.labels("deps", LINUX_X86_64_CUDA) == ("//slim:core_static", "//slim:cuda_guard_static")


def test_cuda_ness_is_a_fact_of_the_platform(graph):
    on_cpu = xref.cuda_reasons(graph, CUDA_DEPS, ANDROID_ARM64)
    with_cuda = xref.cuda_reasons(graph, CUDA_DEPS, LINUX_X86_64_CUDA)
    assert set(on_cpu) == {"//slim:cuda_guard", "//slim:uses_guard", "//slim:says_android"}
    assert with_cuda["//slim:storage"] == xref.CudaReason("external_dep", "cuda")
    assert with_cuda["//slim:tensor"].chain == ("//slim:tensor", "//slim:storage")
    assert "//slim:storage" in xref.cuda_reasons(graph, CUDA_DEPS)  # any configuration


def test_what_a_target_links_is_a_fact_of_the_platform():
    model = BuildModel(
        memory_tree({".buckconfig": "[repositories]\n  root = .\n", "slim/BUCK": BUCK, "slim/targets.bzl": TARGETS_BZL})
    )
    assert set(linkage.dependency_closure(model, "xplat", "//slim:tensor", ANDROID_ARM64)) == {
        "//slim:tensor",
        "//slim:storage",
        "//slim:core",
    }
    with_cuda = linkage.dependency_closure(model, "xplat", "//slim:tensor", LINUX_X86_64_CUDA)
    assert linkage.path_to(with_cuda, "//slim:cuda_guard") == ("//slim:tensor", "//slim:storage", "//slim:cuda_guard")
    assert "//slim:cuda_guard" in linkage.dependency_closure(model, "xplat", "//slim:tensor")  # any configuration
    assert set(linkage.dependents_closure(model, "xplat", "//slim:cuda_guard", LINUX_X86_64)) == {
        "//slim:cuda_guard",
        "//slim:uses_guard",
        "//slim:says_android",
    }


def test_incompatibility_spreads_through_configured_deps(graph):
    on_android = platforms.incompatible_targets(graph, ANDROID_ARM64)
    assert on_android == {
        "//slim:cuda_guard": platforms.Incompatibility(("//slim:cuda_guard",), "compatible_with"),
        "//slim:uses_guard": platforms.Incompatibility(("//slim:uses_guard", "//slim:cuda_guard"), "compatible_with"),
        "//slim:says_android": platforms.Incompatibility(
            ("//slim:says_android", "//slim:uses_guard", "//slim:cuda_guard"), "compatible_with"
        ),
    }
    # storage and tensor stay compatible: the guarded dep is only in the has_cuda branch.
    on_linux = platforms.incompatible_targets(graph, LINUX_X86_64)
    assert set(on_linux) == {"//slim:cuda_guard", "//slim:uses_guard", "//slim:says_android", "//slim:arm_only"}
    assert on_linux["//slim:arm_only"].attribute == "target_compatible_with"
    assert platforms.incompatible_targets(graph, LINUX_X86_64_CUDA) == {
        "//slim:says_android": platforms.Incompatibility(("//slim:says_android",), "compatible_with"),
        "//slim:arm_only": platforms.Incompatibility(("//slim:arm_only",), "target_compatible_with"),
    }


def test_only_an_explicitly_compatible_target_on_an_incompatible_dep_is_an_error(graph):
    assert set(platforms.configuration_errors(graph, ANDROID_ARM64)) == {"//slim:says_android"}
    assert platforms.configuration_errors(graph, LINUX_X86_64) == {}


def test_select_keys_match_by_their_constraints_most_specific_first():
    assert setting_constraints("ovr_config//os:android-arm64") == {"ovr_config//os:android", "ovr_config//cpu:arm64"}
    value = Select((("ovr_config//os:android", "a"), ("ovr_config//os:android-arm64", "b"), ("DEFAULT", "c")))
    assert chosen_branch(value, ANDROID_ARM64) == "b"
    assert chosen_branch(value, Platform("android-x86", ("ovr_config//cpu:x86_64", "ovr_config//os:android"))) == "a"
    assert chosen_branch(value, LINUX_X86_64) == "c"
    assert chosen_branch(Select((("ovr_config//os:macos", ["m"]),)), LINUX_X86_64) is None
    nested = ["x", Select((("ovr_config//cpu:arm64", ["y", Select((("DEFAULT", ["z"]),))]), ("DEFAULT", [])))]
    assert resolve(nested, ANDROID_ARM64) == ["x", "y", "z"]
    assert resolve(nested, LINUX_X86_64) == ["x"]


def test_platforms_are_rows_of_the_cell_table_and_the_config_overrides_them():
    assert cell_named("xplat").platforms == (ANDROID_ARM64, *cell_named("xplat").platforms[1:])
    assert [p.name for p in cell_named("xplat").platforms if p.satisfies("ovr_config//cuda:has_cuda")] == [
        "linux-x86_64-cuda"
    ]
    assert all(p.satisfies("ovr_config//cuda:has_cuda") for p in cell_named("fbcode").platforms)
    assert [p.name for p in cell_named("oss").platforms] == ["linux-x86_64"]
    config = parse_config(
        '[buck.platforms]\nxplat = [{name = "jetson", constraints = ["ovr_config//os:linux", '
        '"ovr_config//cpu:arm64", "ovr_config//cuda:has_cuda"]}]\n'
    )
    assert config.buck.platforms_of("xplat") == (
        Platform("jetson", ("ovr_config//cpu:arm64", "ovr_config//cuda:has_cuda", "ovr_config//os:linux")),
    )
    assert config.buck.platforms_of("fbcode") == cell_named("fbcode").platforms
    with pytest.raises(ConfigError, match=r"buck\.platforms\.xplat"):
        parse_config('[buck.platforms]\nxplat = [{name = "x", constraint = []}]\n')
