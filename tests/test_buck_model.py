"""The per-cell Buck model: cell semantics of design 3.1, select(), splats, limits, cache."""

from __future__ import annotations

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.targets import Select
from bot.store.evaluations import EvaluationCache
from bot.tree import Gitlink, Symlink, memory_tree

BUCKCONFIG = (
    "[repositories]\n  root = .\n  shim = shim\n  shim_et = shim_et\n"
    "[repository_aliases]\n  fbsource = shim_et\n  fbcode_macros = shim\n"
)
MIGRATION = 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
WRAPPER = 'def _lib(**kwargs):\n    kwargs.pop("platforms", None)\n    native.cxx_library(**kwargs)\nruntime = struct(cxx_library = _lib, is_oss = True)\n'


def tree(build: str, targets: str = "") -> object:
    files = {
        ".buckconfig": BUCKCONFIG,
        "shim": Gitlink("1" * 40),
        "shim_et/tools": Symlink("../shim/tools"),
        "shim_et/xplat/executorch/build/runtime_wrapper.bzl": WRAPPER,
        "pkg/BUCK": build,
    }
    if targets:
        files["pkg/targets.bzl"] = targets
    return memory_tree(files)


TARGETS = (
    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
    "def define_common_targets(is_fbcode = False):\n"
    '    runtime.cxx_library(name = "everywhere", platforms = ["CXX"])\n'
    "    if not is_fbcode:\n"
    "        return\n"
    '    runtime.cxx_library(name = "fbcode_and_oss", deps = [":everywhere"] + select({"DEFAULT": [], "ovr_config//os:linux": ["//executorch/other:x"]}))\n'
)


def labels(graph):
    """Labels, without the `_static` twins ExecuTorch's wrapper adds to every library."""
    return {label for label in graph.targets if not label.endswith("_static")}


def test_binding_patterns_define_per_cell():
    both = tree(
        MIGRATION
        + 'load(":targets.bzl", "define_common_targets")\nfbcode_target(_kind = define_common_targets,)\nnon_fbcode_target(_kind = define_common_targets,)\n',
        TARGETS,
    )
    assert labels(evaluate_cell(both, "xplat")) == {"//pkg:everywhere"}  # is_fbcode defaults to False
    assert labels(evaluate_cell(both, "fbcode")) == {"//pkg:everywhere"}
    fbcode_only = tree(
        MIGRATION + 'load(":targets.bzl", "define_common_targets")\nfbcode_target(_kind = define_common_targets,)\n',
        TARGETS,
    )
    assert labels(evaluate_cell(fbcode_only, "xplat")) == set()
    assert labels(evaluate_cell(fbcode_only, "oss")) == {"//pkg:everywhere"}
    passing = tree(
        'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
        'load(":targets.bzl", "define_common_targets")\ndefine_common_targets(is_fbcode = is_fbcode())\n',
        TARGETS,
    )
    assert labels(evaluate_cell(passing, "xplat")) == {"//pkg:everywhere"}
    assert labels(evaluate_cell(passing, "fbcode")) == {"//pkg:everywhere", "//pkg:fbcode_and_oss"}
    assert "//pkg:everywhere_static" in evaluate_cell(passing, "fbcode").targets
    oss = evaluate_cell(passing, "oss")
    assert labels(oss) == {"//pkg:everywhere", "//pkg:fbcode_and_oss"}
    # The OSS wrapper pops platforms; internal cells record attributes as given.
    assert oss.targets["//pkg:everywhere"].attr("platforms") is None
    assert evaluate_cell(passing, "fbcode").targets["//pkg:everywhere"].attr("platforms") == ["CXX"]


def test_select_and_call_site_and_macro_stack():
    graph = evaluate_cell(
        tree('load(":targets.bzl", "define_common_targets")\ndefine_common_targets(is_fbcode = True)\n', TARGETS),
        "fbcode",
    )
    target = graph.targets["//pkg:fbcode_and_oss"]
    assert isinstance(target.attr("deps")[-1], Select)
    assert target.labels("deps") == ("//pkg:everywhere", "//other:x")
    assert (target.path, target.line) == ("pkg/targets.bzl", 6)
    assert [(f.path, f.line) for f in target.stack] == [("pkg/BUCK", 2), ("pkg/targets.bzl", 6)]


def test_kwargs_splat_reaches_the_rule():
    build = 'guard = {"compatible_with": ["ovr_config//cuda:has_cuda"]}\ncxx_library(name = "k", srcs = ["k.cu"], **guard)\n'
    target = evaluate_cell(tree(build), "xplat").targets["//pkg:k"]
    assert target.attr("compatible_with") == ["ovr_config//cuda:has_cuda"]


def test_errors_are_data_and_limits_hold():
    recursion = evaluate_cell(tree("def f(n):\n    return f(n + 1)\nf(0)\n"), "xplat").errors
    assert recursion[0].kind == "limit"
    loop = evaluate_cell(
        tree("def f():\n    for i in range(1000000000):\n        pass\nf()\n"), "xplat", seconds_per_package=0.5
    ).errors
    assert loop[0].kind == "limit" and "exceeded" in loop[0].message
    missing = evaluate_cell(tree('load(":nope.bzl", "x")\n'), "oss").errors
    assert missing[0].kind == "load" and "nope.bzl" in missing[0].message


def test_cache_reevaluates_only_what_changed(tmp_path):
    cache = EvaluationCache(tmp_path)
    first = evaluate_cell(tree('cxx_library(name = "a")\n'), "xplat", cache=cache)
    again = evaluate_cell(tree('cxx_library(name = "a")\n'), "xplat", cache=cache)
    changed = evaluate_cell(tree('cxx_library(name = "b")\n'), "xplat", cache=cache)
    assert [r.cached for r in first.packages.values()] == [False]
    assert [r.cached for r in again.packages.values()] == [True]
    assert [r.cached for r in changed.packages.values()] == [False] and labels(changed) == {"//pkg:b"}


def test_cache_follows_glob_listings(tmp_path):
    cache = EvaluationCache(tmp_path)
    build = 'cxx_library(name = "a", srcs = glob(["*.cpp"]))\n'

    def with_sources(*names):
        files = {".buckconfig": BUCKCONFIG, "pkg/BUCK": build}
        files.update({f"pkg/{n}": "" for n in names})
        return memory_tree(files)

    first = evaluate_cell(with_sources("a.cpp"), "xplat", cache=cache)
    added = evaluate_cell(with_sources("a.cpp", "b.cpp"), "xplat", cache=cache)
    assert first.targets["//pkg:a"].attr("srcs") == ["a.cpp"]
    assert added.targets["//pkg:a"].attr("srcs") == ["a.cpp", "b.cpp"]
    assert [r.cached for r in added.packages.values()] == [False]


def test_each_cell_reads_its_own_build_files():
    files = {
        ".buckconfig": BUCKCONFIG + "[buildfile]\n  name_v2 = TARGETS,BUCK\n",
        "fbcode_only/TARGETS": 'cxx_library(name = "internal")\n',
        "both/TARGETS": 'cxx_library(name = "from_targets")\n',
        "both/BUCK": 'cxx_library(name = "from_buck")\n',
    }
    tree = memory_tree(files)
    assert set(evaluate_cell(tree, "fbcode").targets) == {"//fbcode_only:internal", "//both:from_targets"}
    assert set(evaluate_cell(tree, "xplat").targets) == {"//both:from_buck"}
    assert set(evaluate_cell(tree, "oss").targets) == {"//fbcode_only:internal", "//both:from_targets"}


def test_labels_normalize_every_spelling_of_the_repository():
    from bot.buck.targets import normalize_label

    spellings = [
        ":x",
        "//executorch/pkg:x",
        "fbsource//xplat/executorch/pkg:x",
        "//xplat/executorch/pkg:x",
        "root//pkg:x",
    ]
    assert {normalize_label(s, "pkg") for s in spellings} == {"//pkg:x"}
    assert normalize_label("//executorch/pkg/sub", "other") == "//pkg/sub:sub"
