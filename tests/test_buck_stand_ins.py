"""Stand-ins for what a revision's git tree does not contain behave like the real thing.

Each test pins one stand-in whose misbehaviour once failed a real ExecuTorch package in the
model only: skylib's `paths` (backends/arm/test), a `select()` of strings concatenated to a
string (backends/vulkan), a Meta macro whose result is concatenated to a list
(backends/xnnpack/test), list constants of an unreadable submodule (backends/xnnpack/third-party).
The real `shim/` files, mounted where the shim mirror is present, must define what the built-in
equivalents define (design 3.1).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.shim import shim_gitlink, with_shim
from bot.buck.targets import Select
from bot.repo import GitRepository
from bot.tree import Gitlink, Symlink, memory_tree, mount

BUCKCONFIG = (
    "[repositories]\n  root = .\n  shim = shim\n  shim_et = shim_et\n  prelude = third-party/prelude\n"
    "[repository_aliases]\n  fbsource = shim_et\n  fbcode_macros = shim\n  bazel_skylib = shim\n  fbcode = shim_et\n"
)
SHIM_COMMIT = "52196a3be467802f1cadce1debe7d8712e7327ee"
SHIM_MIRROR = Path(os.environ.get("PR_CHECK_SHIM_MIRROR", "/work/.mirror/facebook+buck2-shims-meta/repo"))


def tree(build: str, **extra: object):
    files = {
        ".buckconfig": BUCKCONFIG,
        "shim": Gitlink(SHIM_COMMIT),
        "third-party/prelude": Gitlink("2" * 40),
        "shim_et/tools": Symlink("../shim/tools"),
        "pkg/BUCK": build,
    }
    files.update(extra)
    return memory_tree(files)


def target(build: str, cell: str, label: str = "//pkg:t", **extra: object):
    graph = evaluate_cell(tree(build, **extra), cell)
    assert graph.errors == (), graph.errors
    return graph.targets[label]


PATHS_BUCK = (
    'load("@bazel_skylib//lib:paths.bzl", "paths")\n'
    "genrule(name = 't', outs = [\n"
    '    paths.basename("ops/test_add.py").replace("test_", ""),\n'
    '    paths.basename("dir/"),\n'
    '    paths.dirname("a/b/c.py"), paths.dirname("/top"), paths.dirname("plain"), paths.dirname("a//b"),\n'
    '    paths.join("a", "b", "c"), paths.join("a/", "b"), paths.join("a", "/abs", "c"), paths.join("", "x"),\n'
    '    paths.normalize("a/./b/../c//d/"), paths.normalize("../x/.."), paths.normalize("/../a"), paths.normalize(""),\n'
    '    paths.relativize("a/b/c", "a"), paths.replace_extension("d/f.tar.gz", ".zip"),\n'
    '    paths.split_extension(".bashrc")[1], paths.split_extension("x/y.cpp")[0],\n'
    "    str(paths.is_absolute('/x')), str(paths.is_absolute('x')),\n"
    "])\n"
)
# os.path semantics for POSIX paths, as bazel-skylib documents them (written out by hand).
PATHS_EXPECTED = [
    "add.py",
    "",
    "a/b",
    "/",
    "",
    "a",
    "a/b/c",
    "a/b",
    "/abs/c",
    "x",
    "a/c/d",
    "..",
    "/a",
    ".",
    "b/c",
    "d/f.tar.zip",
    "",
    "x/y",
    "True",
    "False",
]


@pytest.mark.parametrize("cell", ["fbcode", "xplat", "oss"])
def test_skylib_paths_built_in_has_posix_semantics(cell):
    assert target(PATHS_BUCK, cell).attr("outs") == PATHS_EXPECTED


def test_prelude_paths_is_the_same_built_in():
    build = PATHS_BUCK.replace("@bazel_skylib//lib:paths.bzl", "@prelude//:paths.bzl")
    assert target(build, "oss").attr("outs") == PATHS_EXPECTED
    assert target(build, "fbcode").attr("outs") == PATHS_EXPECTED


@pytest.mark.parametrize("cell", ["fbcode", "xplat", "oss"])
def test_select_of_strings_concatenates_with_strings(cell):
    build = (
        "genrule(name = 't', cmd = \"gen --nthreads 1 \" + select({\n"
        '    "DEFAULT": "",\n'
        '    "ovr_config//os:linux": "--replace-u16vecn",\n'
        '}) + " --out $OUT", srcs = ["a"] + select({"DEFAULT": ["b"]}))\n'
    )
    made = target(build, cell)
    assert made.attr("cmd") == Select(
        (
            ("DEFAULT", "gen --nthreads 1  --out $OUT"),
            ("ovr_config//os:linux", "gen --nthreads 1 --replace-u16vecn --out $OUT"),
        )
    )
    assert made.values("srcs") == ("a", "b")


def test_select_of_strings_is_a_select_to_type():
    build = 'genrule(name = "t", outs = [type(select({"DEFAULT": "x"})), type("x"), type(select({"DEFAULT": []}))])\n'
    assert target(build, "oss").attr("outs") == ["select", "string", "select"]


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_stubbed_macro_concatenated_to_a_list_returns_a_list(cell):
    build = (
        'load("@fbsource//xplat/caffe2:pt_defs.bzl", "get_pt_ops_deps")\n'
        'load("@fbsource//tools/build_defs:flags.bzl", "get_flags", "get_prefix")\n'
        'cxx_library(name = "t", deps = ["//a:b"] + get_pt_ops_deps(name = "pt_ops_full", train = True, deps = []))\n'
        'cxx_library(name = "s", compiler_flags = ["-O2"] + get_flags())\n'
        'genrule(name = "u", cmd = "x" + get_prefix())\n'
    )
    graph = evaluate_cell(tree(build), cell)
    assert graph.errors == ()
    assert graph.targets["//pkg:t"].attr("deps") == ["//a:b"]
    assert graph.targets["//pkg:pt_ops_full"].kind == "get_pt_ops_deps"  # the macro's own rule, recorded
    assert graph.targets["//pkg:s"].attr("compiler_flags") == ["-O2"]
    assert graph.targets["//pkg:u"].attr("cmd") == "x"


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_stubbed_macro_unpacked_as_keyword_arguments_returns_a_dict(cell):
    # examples/bundled_executor_runner (34317e2a66, Aug 2023): `**get_oss_build_kwargs()` from the
    # wrapper the internal cells stub; an empty list there failed the whole package.
    build = (
        'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "get_oss_build_kwargs", "runtime")\n'
        'runtime.cxx_binary(name = "t", srcs = ["t.cpp"], **get_oss_build_kwargs())\n'
    )
    graph = evaluate_cell(tree(build), cell)
    assert graph.errors == ()
    assert graph.targets["//pkg:t"].attr("srcs") == ["t.cpp"]


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_stubbed_rule_macro_called_as_a_statement_still_returns_none(cell):
    build = (
        'load("@fbcode_macros//build_defs:python_pytest.bzl", "python_pytest")\n'
        'result = python_pytest(name = "t", srcs = ["a.py"])\n'
        'genrule(name = "r", outs = [str(result)])\n'
    )
    graph = evaluate_cell(tree(build), cell)
    assert graph.targets["//pkg:t"].kind == "python_pytest"
    assert graph.targets["//pkg:r"].attr("outs") == ["None"]


@pytest.mark.parametrize("cell", ["fbcode", "xplat", "oss"])
def test_plural_constants_of_an_unreadable_submodule_are_lists(cell):
    build = (
        'load("//third/XNNPACK:build_srcs.bzl", _OPERATOR_SRCS = "OPERATOR_SRCS")\n'
        'load("@fbsource//tools/build_defs:platform_defs.bzl", "ANDROID")\n'
        'cxx_library(name = "t", srcs = ["XNNPACK/" + s for s in _OPERATOR_SRCS], platforms = (ANDROID,))\n'
    )
    made = target(build, cell, **{"third/XNNPACK": Gitlink("3" * 40)})
    assert made.attr("srcs") == []
    assert made.attr("platforms") == ["ANDROID"]


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_fbsource_executorch_path_is_the_repository_itself_in_internal_cells(cell):
    build = 'load("@fbsource//xplat/executorch/backends/gpu:targets.bzl", "flags")\ncxx_library(name = "t", compiler_flags = flags())\n'
    made = target(build, cell, **{"backends/gpu/targets.bzl": 'def flags():\n    return ["-DREAL"]\n'})
    assert made.attr("compiler_flags") == ["-DREAL"]


def test_set_stand_in_for_files_that_call_set():
    lib = (
        "def unique(items, dropped):\n"
        "    kept = set(items).difference(set(dropped))\n"
        '    return sorted(kept) + list(kept.union(["z"]).difference(list(kept)))\n'
    )
    build = 'load(":lib.bzl", "unique")\ngenrule(name = "t", outs = unique(["b", "a", "b", "c"], ["c"]))\n'
    assert target(build, "oss", **{"pkg/lib.bzl": lib}).attr("outs") == ["a", "b", "z"]


def test_buck2_rule_globals_for_shim_files_that_use_them():
    lib = (
        "Info = provider(fields = ['srcs'])\n"
        "def _impl(ctx):\n    return [DefaultInfo(), Info(srcs = ctx.attrs.srcs)]\n"
        "proto_srcs = rule(impl = _impl, attrs = {'srcs': attrs.list(attrs.source(), default = [])})\n"
        "def cond(condition: str) -> Select:\n    return select({condition: ['x'], 'DEFAULT': []})\n"
    )
    build = 'load(":lib.bzl", "cond", "proto_srcs")\nproto_srcs(name = "p", srcs = ["a.proto"])\ngenrule(name = "t", srcs = cond("c"))\n'
    graph = evaluate_cell(tree(build, **{"pkg/lib.bzl": lib}), "oss")
    assert graph.errors == ()
    assert graph.targets["//pkg:p"].kind == "custom_rule"
    assert graph.targets["//pkg:t"].attr("srcs") == [Select((("c", ["x"]), ("DEFAULT", [])))]


# --- the real shim files, mounted ------------------------------------------------------------

FAKE_SHIM = {
    "build_defs/build_file_migration.bzl": (
        "def fbcode_target(_kind, **kwargs):\n    return _kind(**kwargs)\n"
        "def non_fbcode_target(_kind, **kwargs):\n    return None\n"
    ),
    "tools/build_defs/fbsource_utils.bzl": "def is_fbcode():\n    return True\ndef is_xplat():\n    return False\n",
}


def test_mounted_shim_files_replace_the_gitlink():
    plain = tree("cxx_library(name = 't')\n")
    mounted = mount(plain, "shim", memory_tree(FAKE_SHIM))
    assert "shim" not in mounted.gitlinks() and mounted.mounts == {"shim": SHIM_COMMIT}
    assert (
        mounted.read_text("shim_et/tools/build_defs/fbsource_utils.bzl")
        == FAKE_SHIM["tools/build_defs/fbsource_utils.bzl"]
    )
    assert mounted.read_text("pkg/BUCK") == "cxx_library(name = 't')\n"
    assert shim_gitlink(plain) == ("shim", SHIM_COMMIT)
    asked = []
    assert with_shim(plain, lambda commit: asked.append(commit) or None) is plain  # no source: built-ins stay
    assert asked == [SHIM_COMMIT]


def test_oss_evaluates_the_mounted_shim_files_not_the_built_ins():
    # A shim whose non_fbcode_target defines: the mounted file, not the built-in, decides.
    defining = dict(
        FAKE_SHIM,
        **{
            "build_defs/build_file_migration.bzl": (
                "def fbcode_target(_kind, **kwargs):\n    return None\n"
                "def non_fbcode_target(_kind, **kwargs):\n    return _kind(**kwargs)\n"
            )
        },
    )
    build = (
        'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
        'fbcode_target(_kind = cxx_library, name = "f")\nnon_fbcode_target(_kind = cxx_library, name = "n")\n'
    )
    assert set(evaluate_cell(tree(build), "oss").targets) == {"//pkg:f"}
    mounted = mount(tree(build), "shim", memory_tree(defining))
    graph = evaluate_cell(mounted, "oss")
    assert set(graph.targets) == {"//pkg:n"}
    assert {t.stack[-1].path for t in graph.targets.values()} == {"shim/build_defs/build_file_migration.bzl"}
    assert set(evaluate_cell(mounted, "xplat").targets) == {"//pkg:n"}  # internal cells keep their own macros


@pytest.fixture(scope="module")
def real_shim():
    if not (SHIM_MIRROR / "objects").is_dir() and not (SHIM_MIRROR / ".git").exists():
        pytest.skip(f"no buck2-shims-meta mirror at {SHIM_MIRROR} (set PR_CHECK_SHIM_MIRROR)")
    repository = GitRepository(SHIM_MIRROR)
    if not repository.has_commit(SHIM_COMMIT):
        pytest.skip(f"the shim mirror lacks {SHIM_COMMIT}")
    return repository.tree(SHIM_COMMIT)


DESIGN_BUCK = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
    'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
    'load("@fbcode_macros//build_defs:cpp_library.bzl", "cpp_library")\n'
    'load("@bazel_skylib//lib:paths.bzl", "paths")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    'fbcode_target(_kind = cxx_library, name = "fbcode_only", exported_headers = ["a.h"])\n'
    'non_fbcode_target(_kind = cxx_library, name = "xplat_only")\n'
    "define_common_targets(is_fbcode = is_fbcode())\n"
    'cpp_library(name = "lib", srcs = ["lib.cpp"], headers = ["lib.h"], private_headers = ["impl.h"], auto_headers = "none")\n'
    'cpp_library(name = "auto", srcs = ["auto.cpp", "other.cc"], headers = ["listed.h"], private_headers = ["auto-inl.h"])\n'
    'genrule(name = paths.basename("x/gen_" + paths.split_extension("y.py")[0]), outs = ["o"])\n'
)
DESIGN_TARGETS = (
    "def define_common_targets(is_fbcode = False):\n"
    '    native.cxx_library(name = "everywhere")\n'
    "    if not is_fbcode:\n        return\n"
    '    native.cxx_library(name = "fbcode_and_oss")\n'
)


def _defined(graph) -> dict[str, tuple]:
    """label -> (kind, exported headers, private headers): what design 3.1 states per cell."""
    return {
        label: (t.kind, tuple(t.values("exported_headers")), tuple(t.values("headers")))
        for label, t in graph.targets.items()
    }


def test_built_ins_define_what_the_real_shim_files_define(real_shim):
    files = {"pkg/targets.bzl": DESIGN_TARGETS, "pkg/lib.cpp": "", "pkg/lib.h": "", "pkg/impl.h": ""}
    files.update(
        {f"pkg/{name}": "" for name in ("auto.cpp", "auto.h", "auto-inl.h", "auto-defs.tcc", "other.cc", "listed.h")}
    )
    plain = tree(DESIGN_BUCK, **files)
    real = mount(plain, "shim", real_shim)
    built_in, with_real = evaluate_cell(plain, "oss"), evaluate_cell(real, "oss")
    assert built_in.errors == () and with_real.errors == (), (built_in.errors, with_real.errors)
    assert _defined(built_in) == _defined(with_real)
    assert _defined(with_real) == {
        "//pkg:fbcode_only": ("cxx_library", ("a.h",), ()),
        "//pkg:everywhere": ("cxx_library", (), ()),
        "//pkg:fbcode_and_oss": ("cxx_library", (), ()),
        "//pkg:lib": ("cxx_library", ("lib.h",), ("impl.h",)),  # cpp_library: headers are exported
        "//pkg:auto": (
            "cxx_library",
            ("listed.h", "auto-defs.tcc", "auto.h"),
            ("auto-inl.h",),
        ),  # and those named like a source
        "//pkg:gen_y": ("genrule", (), ()),
    }
    assert {label for label, t in with_real.targets.items() if t.stack[-1].path.startswith("shim/")} >= {"//pkg:lib"}


def test_cli_shim_option_mounts_a_git_repository_at_the_pinned_commit(tmp_path, real_shim):
    from pr_check.shim import shim_files

    repo = tmp_path / "et"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / ".buckconfig").write_text(BUCKCONFIG)
    subprocess.run([*git, "add", ".buckconfig"], check=True)
    subprocess.run([*git, "update-index", "--add", "--cacheinfo", f"160000,{SHIM_COMMIT},shim"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "pin the shim"], check=True)
    with GitRepository(repo) as repository:
        plain = repository.tree("HEAD")
        assert shim_files(repository, None)(plain) is plain  # no initialized submodule: built-ins
        mounted = shim_files(repository, SHIM_MIRROR)(plain)
        assert mounted.mounts == {"shim": SHIM_COMMIT}
        assert mounted.blob_id("shim/lib/paths.bzl") == real_shim.blob_id("lib/paths.bzl")


# --- the real tree ---------------------------------------------------------------------------

FAILURES_DOC = Path(__file__).resolve().parent.parent / "docs" / "oss-eval-failures.md"


def _documented_oss_failures() -> dict[str, str]:
    """package -> kind, from the table of docs/oss-eval-failures.md."""
    rows = {}
    for line in FAILURES_DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[0] not in ("package", "---"):
            rows[cells[0]] = cells[1]
    return rows


@pytest.fixture(scope="module")
def main_tree(executorch_mirror):
    repository = GitRepository(executorch_mirror)
    return repository.tree(repository.resolve("refs/heads/main"))


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_real_tree_internal_cells_evaluate_every_package(main_tree, cell):
    graph = evaluate_cell(main_tree, cell)
    assert [(e.package, e.message) for e in graph.errors] == []
    assert len(graph.packages) > 300


def test_real_tree_oss_failures_with_the_real_shim_are_the_documented_ones(main_tree, real_shim):
    documented = _documented_oss_failures()
    assert len(documented) == 35
    graph = evaluate_cell(mount(main_tree, "shim", real_shim), "oss")
    assert {e.package: e.kind for e in graph.errors} == documented


def test_real_tree_oss_fallback_fails_no_package_of_its_own(main_tree):
    graph = evaluate_cell(main_tree, "oss")
    failing = {e.package for e in graph.errors}
    assert failing <= set(_documented_oss_failures())
    assert len(failing) == 19


@pytest.mark.parametrize("cell", ["fbcode", "xplat"])
def test_own_macros_under_the_pre_2025_in_tree_shim_are_read_not_stubbed(cell):
    # Before 9c51e584cc (Feb 2025) ExecuTorch's macros lived in an in-tree shim/ directory, not
    # shim_et/: codegen.bzl's `<name>_headers` targets (//kernels/portable:generated_lib_headers,
    # 8490570b7a) existed in the internal cells only if the file is read.
    old_tree = memory_tree(
        {
            ".buckconfig": "[repositories]\n  root = .\n  shim = shim\n[repository_aliases]\n  fbsource = shim\n",
            "shim/xplat/executorch/codegen/codegen.bzl": (
                'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                "def executorch_generated_lib(name):\n"
                '    runtime.cxx_library(name = name + "_headers")\n'
                "    runtime.cxx_library(name = name)\n"
            ),
            "shim/xplat/executorch/build/runtime_wrapper.bzl": "def get_oss_build_kwargs():\n    return {}\n",
            "pkg/BUCK": (
                'load("@fbsource//xplat/executorch/codegen:codegen.bzl", "executorch_generated_lib")\n'
                'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "get_oss_build_kwargs")\n'
                'executorch_generated_lib(name = "generated_lib")\n'
                'genrule(name = "g", outs = [str(get_oss_build_kwargs())])\n'
            ),
        }
    )
    graph = evaluate_cell(old_tree, cell)
    assert graph.errors == ()
    assert {"//pkg:generated_lib", "//pkg:generated_lib_headers"} <= set(graph.targets)
    assert graph.targets["//pkg:g"].attr("outs") == ["{}"]
