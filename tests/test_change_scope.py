"""Change-scoped checks still see a finding whose cause is far from the diff, and still leave
alone what the base already had (bot/facts/change_scope.py)."""

from __future__ import annotations

from bot import engine
from bot.diff import ChangeSet, FileChange
from bot.facts import change_scope
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot
from bot.tree import memory_tree
from checks.link_whole_without_python_dlopen import CHECK as LINK_WHOLE

_SHIMS = (
    'cxx_library(\n    name = "common_shims_slim",\n    srcs = ["common_shims_slim.cpp"],\n    link_whole = True,\n)\n'
)
_EXTENSION = 'cxx_python_extension(name = "_portable_lib", deps = [{deps}])\n'


def _review(base: dict[str, str], head: dict[str, str]) -> Snapshot:
    changes = []
    for path, text in head.items():
        if base.get(path) != text:
            lines = frozenset(range(1, text.count("\n") + 2))
            changes.append(FileChange(path, path, "modified", added=lines, commentable=lines, hunks=((1, len(lines)),)))
    mode = ReviewMode.REVIEW if base else ReviewMode.SCAN  # as the pipeline decides it
    return Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet(tuple(changes)), mode=mode)


def test_a_dependent_in_another_package_brings_an_unchanged_target_into_scope():
    # The pull request edits only the Python extension's package; the force-linked library it
    # starts to link, in another package and file, is what breaks.
    base = {"backends/aoti/BUCK": _SHIMS, "extension/pybindings/BUCK": _EXTENSION.format(deps="")}
    head = dict(base, **{"extension/pybindings/BUCK": _EXTENSION.format(deps='"//backends/aoti:common_shims_slim"')})
    snap = _review(base, head)
    # Not among the targets the change touched: only the dependents' fact brings it in.
    assert "//backends/aoti:common_shims_slim" not in change_scope.changed_targets(snap, "fbcode").labels
    result = engine.run([LINK_WHOLE], snap)
    # fbcode alone: the OSS build's CI reaches neither package, and the engine keeps one finding per identity.
    assert [(f.rule, f.cell, f.path, f.line, f.target) for f in result.findings] == [
        (LINK_WHOLE.id, "fbcode", "backends/aoti/BUCK", 4, "//backends/aoti:common_shims_slim")
    ]


def test_what_the_base_already_had_is_not_blamed_on_a_change_in_the_same_file():
    # The library was linked unflagged before; the change adds an unrelated target to its file,
    # which puts it in scope: the baseline run must look at the same targets and find it there.
    linked = _EXTENSION.format(deps='"//backends/aoti:common_shims_slim"')
    base = {"backends/aoti/BUCK": _SHIMS, "extension/pybindings/BUCK": linked}
    head = dict(base, **{"backends/aoti/BUCK": _SHIMS + 'cxx_library(name = "other")\n'})
    snap = _review(base, head)
    assert "//backends/aoti:common_shims_slim" in change_scope.changed_targets(snap, "fbcode").labels
    assert engine.run([LINK_WHOLE], snap).findings == ()


def test_a_scan_has_everything_in_scope():
    snap = _review({}, {"backends/aoti/BUCK": _SHIMS})
    assert change_scope.changed_targets(snap, "fbcode").everything


def test_a_file_deleted_far_from_the_target_that_names_it_is_still_missed_there():
    # The change deletes a header in another directory; the target naming it is untouched, and
    # so is its CMake twin: both builds are found broken where they name it.
    from checks.source_missing import CHECK as SOURCE_MISSING

    lib = 'cxx_library(\n    name = "lib",\n    srcs = ["lib.cpp"],\n    exported_headers = ["//x:y", "../common/util.h"],\n)\n'
    cmake = "add_library(lib lib.cpp ${CMAKE_CURRENT_SOURCE_DIR}/../common/util.h)\n"
    base = {
        "kernels/lib/BUCK": lib,
        "kernels/lib/CMakeLists.txt": cmake,
        "kernels/lib/lib.cpp": "int f();\n",
        "kernels/common/util.h": "#pragma once\n",
        "kernels/common/other.h": "#pragma once\n",
    }
    head = {path: text for path, text in base.items() if path != "kernels/common/util.h"}
    gone = FileChange(
        "kernels/common/util.h",
        "kernels/common/util.h",
        "deleted",
        added=frozenset(),
        commentable=frozenset(),
        hunks=(),
    )
    snap = Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((gone,)))
    assert not any(label.startswith("//kernels/lib") for label in change_scope.changed_targets(snap, "fbcode").labels)
    found = {(f.path, f.line, f.cell) for f in engine.run([SOURCE_MISSING], snap).findings}
    assert found == {("kernels/lib/BUCK", 4, "fbcode"), ("kernels/lib/CMakeLists.txt", 1, None)}


def test_a_definition_added_far_away_makes_an_unchanged_gate_a_near_miss():
    # The header has tested `ET_UE_THREADPOOL` all along, with nothing spelt near it defined; the
    # change defines `ET_USE_THREADPOOL` in another package's build, and the old gate is now a typo.
    from checks.gate_macro_misspelt import CHECK as MISSPELT

    reduce_util = "#pragma once\n#ifdef ET_UE_THREADPOOL\nint parallel();\n#endif\n"
    base = {"kernels/util/reduce_util.h": reduce_util, "runtime/BUCK": 'cxx_library(name = "threadpool")\n'}
    head = dict(
        base,
        **{"runtime/BUCK": 'cxx_library(name = "threadpool", exported_preprocessor_flags = ["-DET_USE_THREADPOOL"])\n'},
    )
    found = [(f.rule, f.path, f.line) for f in engine.run([MISSPELT], _review(base, head)).findings]
    assert found == [(MISSPELT.id, "kernels/util/reduce_util.h", 2)]


def test_a_changed_path_is_also_seen_through_a_symlink_that_points_above_it():
    # ExecuTorch's `src/executorch/backends` is a link to `backends`: deleting a file under
    # `backends/` flips the existence of the same file under the link too.
    from bot.tree import Symlink

    base = {
        "backends/cuda/shim.h": "#pragma once\n",
        "src/executorch/backends": Symlink("../../backends"),
        "README.md": "x\n",
    }
    head = {path: text for path, text in base.items() if path != "backends/cuda/shim.h"}
    gone = FileChange(
        "backends/cuda/shim.h", "backends/cuda/shim.h", "deleted", added=frozenset(), commentable=frozenset(), hunks=()
    )
    snap = Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet((gone,)))
    assert change_scope.listing_changes(snap) == {
        "backends",
        "backends/cuda",
        "backends/cuda/shim.h",
        "src",
        "src/executorch",
        "src/executorch/backends",
        "src/executorch/backends/cuda",
        "src/executorch/backends/cuda/shim.h",
    }


def test_a_dependency_made_fbcode_only_breaks_an_unchanged_dependent_in_xplat():
    # The change binds extension/cuda into fbcode alone; backends/cuda, untouched, still depends
    # on it from xplat, where it no longer exists.
    from checks.cell_dependency_missing import _API, _BOTH, _BUCKCONFIG, _FBCODE_ONLY, _user
    from checks.cell_dependency_missing import CHECK as CELL_DEPENDENCY

    base = {
        ".buckconfig": _BUCKCONFIG,
        "extension/cuda/BUCK": _BOTH,
        "extension/cuda/targets.bzl": _API,
        "backends/cuda/BUCK": _BOTH,
        "backends/cuda/targets.bzl": _user(""),
    }
    head = dict(base, **{"extension/cuda/BUCK": _FBCODE_ONLY})
    snap = _review(base, head)
    assert "//backends/cuda:backend" not in change_scope.changed_targets(snap, "xplat").labels
    found = [(f.rule, f.cell, f.path, f.line) for f in engine.run([CELL_DEPENDENCY], snap).findings]
    assert found == [(CELL_DEPENDENCY.id, "xplat", "backends/cuda/targets.bzl", 4)]
