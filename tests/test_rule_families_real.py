"""The rule families of issue 18 on the real ExecuTorch tree (runs when a fetched mirror is present).

Each expectation is written from reading the Aug 2026 tree (refs/heads/main of the mirror): the
edit applied in memory is the one the issue names, and what must be reported was checked by hand
in the files cited. Every test works on that one tree, so the session's evaluation cache holds
its Buck and CMake models after the first: an edit re-evaluates only what it changes.

The real introducer/fix pairs of tests/real_tree/corpus/rule_families.toml are history runs (two
whole-tree reviews each, minutes): `make corpus` (bench/corpus.py) checks them, as it does every
corpus file; here only their file is checked for shape.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import checks
from bot import pipeline
from bot.patch import apply_diff
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache

REAL_TREE = Path(__file__).parent / "real_tree"


@pytest.fixture(scope="module")
def aug_2026(executorch_mirror, real_tree_cache):
    """The Aug 2026 tree and the session's evaluation cache, read once for the module."""
    with GitRepository(executorch_mirror) as repo:
        tree = repo.tree(repo.resolve("refs/heads/main"))
    return tree, EvaluationCache(real_tree_cache)


def _review_edit(aug_2026, diff: str, rules: tuple[str, ...]):
    base, cache = aug_2026
    selected = tuple(checks.BY_ID[rule] for rule in rules)
    head = apply_diff(base, diff)
    return pipeline.review_trees(base, head.tree, head.changes, checks=selected, cache=cache)


def test_scan_of_the_aug_2026_tree_reports_only_judged_findings(aug_2026):
    # First: the whole-tree scan evaluates every model the edits below share.
    tree, cache = aug_2026
    judged = tomllib.loads((REAL_TREE / "scan_rule_families.toml").read_text())
    selected = tuple(checks.BY_ID[rule] for rule in judged["rules"])
    report = pipeline.scan_tree(tree, checks=selected, cache=cache)
    found = sorted((f.rule, f.path, f.line, f.target) for f in report.findings)
    assert found == sorted((f["rule"], f["path"], f["line"], f["target"]) for f in judged["finding"])
    for near in judged["near_miss"]:
        assert not [
            f for f in report.findings if f.rule == near["rule"] and near["subject"] in (f.message + (f.target or ""))
        ]


# #24643 deleted ETensor's tensor_attribute.cpp because common_shims_slim.cpp defines the same
# two shims; on the Aug 2026 tree aoti_cuda_shims links aoti_common_shims_slim whole (PRIVATE,
# backends/cuda/CMakeLists.txt:310), so putting the file back into its sources breaks the link.
TENSOR_ATTRIBUTE_BACK = (
    "diff --git a/backends/cuda/CMakeLists.txt b/backends/cuda/CMakeLists.txt\n"
    "--- a/backends/cuda/CMakeLists.txt\n+++ b/backends/cuda/CMakeLists.txt\n"
    "@@ -236 +236,2 @@ set(_aoti_cuda_shim_sources runtime/cuda_allocator.cpp runtime/shims/memory.cpp\n"
    "-                            runtime/shims/cuda_guard.cpp\n"
    "+                            runtime/shims/cuda_guard.cpp\n"
    "+                            runtime/shims/tensor_attribute.cpp\n"
)


def test_tensor_attribute_back_in_cuda_shims_is_a_duplicate_symbol(aug_2026):
    report = _review_edit(aug_2026, TENSOR_ATTRIBUTE_BACK, ("link-duplicate-symbol",))
    found = {(f.rule, f.path, f.line) for f in report.findings}
    by_symbol = {f.message.split("C-linkage function `")[1].split("`")[0]: f for f in report.findings}
    assert set(by_symbol) == {"aoti_torch_get_device_type", "aoti_torch_device_type_cuda"}, found
    finding = by_symbol["aoti_torch_get_device_type"]
    assert (finding.rule, finding.path, finding.line, finding.target) == (
        "link-duplicate-symbol",
        "backends/cuda/CMakeLists.txt",
        237,
        "aoti_cuda_shims",
    )
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/shims/tensor_attribute.cpp", 16) in evidence
    assert ("backends/aoti/common_shims_slim.cpp", 99) in evidence
    # The --whole-archive link item (line 310 at base, one line lower after the edit).
    assert ("backends/cuda/CMakeLists.txt", 311) in evidence
    assert not [f for f in report.findings if f.rule == "internal-error"]


# The CUDA delegate registers itself from a static initializer (cuda_backend.cpp, `register_backend`),
# so Buck force-links //backends/cuda/runtime:cuda_backend (link_whole = True) and CMake makes every
# consumer of aoti_cuda_backend take it whole through executorch_target_link_options_shared_lib.
# Dropping that call leaves executor_runner linking the archive on demand: the backend vanishes.
WHOLE_ARCHIVE_DROPPED = (
    "diff --git a/backends/cuda/CMakeLists.txt b/backends/cuda/CMakeLists.txt\n"
    "--- a/backends/cuda/CMakeLists.txt\n+++ b/backends/cuda/CMakeLists.txt\n"
    "@@ -409 +408,0 @@ endif()\n"
    "-executorch_target_link_options_shared_lib(aoti_cuda_backend)\n"
)


def test_cuda_backend_linked_on_demand_breaks_whole_archive_parity(aug_2026):
    report = _review_edit(aug_2026, WHOLE_ARCHIVE_DROPPED, ("link-whole-parity",))
    found = {(f.rule, f.target) for f in report.findings}
    assert ("link-whole-parity", "aoti_cuda_backend") in found, [(f.path, f.line, f.message) for f in report.findings]
    finding = next(f for f in report.findings if f.target == "aoti_cuda_backend")
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/cuda_backend.cpp", 1277) in evidence  # the registering initializer
    assert any(path == "backends/cuda/runtime/targets.bzl" for path, _line in evidence)  # link_whole = True
    assert not [f for f in report.findings if f.rule == "internal-error"]


# The d38ca81dbb class on the Aug 2026 tree. The Android AAR's JNI library takes custom_ops whole
# (extension/android/CMakeLists.txt:140 appends `$<LINK_LIBRARY:WHOLE_ARCHIVE,custom_ops>` to the list
# that line 251 links into executorch_jni), as Buck force-links
# //extension/llm/custom_ops:custom_ops (link_whole = True: its op_*.cpp register through
# EXECUTORCH_LIBRARY). Linking it plainly loses the LLM custom ops in the Android build only; the
# link line exists only under an Android configuration, which a change to extension/android evaluates.
CUSTOM_OPS_ON_DEMAND_IN_JNI = (
    "diff --git a/extension/android/CMakeLists.txt b/extension/android/CMakeLists.txt\n"
    "--- a/extension/android/CMakeLists.txt\n+++ b/extension/android/CMakeLists.txt\n"
    "@@ -140 +140 @@ if(EXECUTORCH_BUILD_KERNELS_LLM)\n"
    "-  list(APPEND link_libraries $<LINK_LIBRARY:WHOLE_ARCHIVE,custom_ops>)\n"
    "+  list(APPEND link_libraries custom_ops)\n"
)


def test_android_jni_linking_custom_ops_on_demand_breaks_whole_archive_parity(aug_2026):
    report = _review_edit(aug_2026, CUSTOM_OPS_ON_DEMAND_IN_JNI, ("link-whole-parity",))
    found = [(f.rule, f.path, f.line, f.target) for f in report.findings]
    # On the link call that expands ${link_libraries}; one finding although Buck has two variants
    # (custom_ops and custom_ops_mkl).
    assert found == [("link-whole-parity", "extension/android/CMakeLists.txt", 251, "custom_ops")], found
    evidence = {(e.path, e.line) for e in report.findings[0].evidence}
    assert any(path == "extension/llm/custom_ops/targets.bzl" for path, _line in evidence)  # link_whole = True
    assert "executorch_jni" in report.findings[0].message


# reduce_util.h tested ET_UE_THREADPOOL (a typo of #9144, fbed0b2c09, Mar 2025) until a84b3c9c15
# (Aug 2025, in the fresh precision window: no corpus pair); extension/threadpool's builds define
# ET_USE_THREADPOOL. The typo, put back into the second gate of the Aug 2026 file (line 839), is
# what the scan of the tree before a84b3c9c15 found at its line 835.
THREADPOOL_TYPO_BACK = (
    "diff --git a/kernels/portable/cpu/util/reduce_util.h b/kernels/portable/cpu/util/reduce_util.h\n"
    "--- a/kernels/portable/cpu/util/reduce_util.h\n+++ b/kernels/portable/cpu/util/reduce_util.h\n"
    "@@ -839 +839 @@ template <typename Func>\n"
    "-#ifdef ET_USE_THREADPOOL\n"
    "+#ifdef ET_UE_THREADPOOL\n"
)


def test_misspelt_threadpool_gate_is_found_with_its_fix(aug_2026):
    report = _review_edit(aug_2026, THREADPOOL_TYPO_BACK, ("gate-macro-misspelt",))
    assert [(f.rule, f.path, f.line, f.target) for f in report.findings] == [
        ("gate-macro-misspelt", "kernels/portable/cpu/util/reduce_util.h", 839, "ET_UE_THREADPOOL")
    ]
    fix = report.findings[0].fix
    assert fix is not None and "#ifdef ET_USE_THREADPOOL" in fix.replacement


# et_pal.cpp tested XTENSA from 6941d46f14 (Dec 2024) until e42d013c4e (Apr 2025): compilers
# define __XTENSA__, never XTENSA, so the Xtensa ISS PAL was compiled out. Put back on line 9.
XTENSA_GATE_BACK = (
    "diff --git a/backends/cadence/runtime/et_pal.cpp b/backends/cadence/runtime/et_pal.cpp\n"
    "--- a/backends/cadence/runtime/et_pal.cpp\n+++ b/backends/cadence/runtime/et_pal.cpp\n"
    "@@ -9 +9 @@\n"
    "-#if defined(__XTENSA__)\n"
    "+#if defined(XTENSA)\n"
)

# DeathTest.h has tested ET_BUILD_MODE_COV since 187bd055fa dropped its underscores, while the
# coverage build modes pass -D__ET_BUILD_MODE_COV=1 (shim_et/.../runtime_wrapper.bzl); 8dfcb014f2
# gave it a default. Without the default (lines 21-24) the gate tests a name nothing defines.
DEATH_TEST_DEFAULT_DROPPED = (
    "diff --git a/test/utils/DeathTest.h b/test/utils/DeathTest.h\n"
    "--- a/test/utils/DeathTest.h\n+++ b/test/utils/DeathTest.h\n"
    "@@ -21,4 +20,0 @@\n"
    "-#ifndef ET_BUILD_MODE_COV\n"
    "-#define ET_BUILD_MODE_COV 0\n"
    "-#endif // ET_BUILD_MODE_COV\n"
    "-\n"
)


def test_compiler_macro_without_its_underscores_is_found_with_its_fix(aug_2026):
    report = _review_edit(aug_2026, XTENSA_GATE_BACK, ("gate-macro-misspelt",))
    assert [(f.rule, f.path, f.line, f.target) for f in report.findings] == [
        ("gate-macro-misspelt", "backends/cadence/runtime/et_pal.cpp", 9, "XTENSA")
    ]
    fix = report.findings[0].fix
    assert fix is not None and "#if defined(__XTENSA__)" in fix.replacement


def test_gate_without_the_underscores_its_flag_keeps_is_found(aug_2026):
    report = _review_edit(aug_2026, DEATH_TEST_DEFAULT_DROPPED, ("gate-macro-misspelt",))
    assert [(f.rule, f.path, f.line, f.target) for f in report.findings] == [
        ("gate-macro-misspelt", "test/utils/DeathTest.h", 21, "ET_BUILD_MODE_COV")
    ]
    assert "__ET_BUILD_MODE_COV" in report.findings[0].message


def test_corpus_file_names_real_rules_and_commits():
    """The history pairs themselves run in `make corpus`; their entries must be usable there."""
    corpus = tomllib.loads((REAL_TREE / "corpus" / "rule_families.toml").read_text())
    for entry in corpus["regression"]:
        assert entry["rule"] in checks.BY_ID, entry["id"]
        assert entry["introducer"] != entry["fix"] and len(entry["introducer"]) >= 10, entry["id"]
        assert entry["subject"] and entry["path"] and entry["reason"], entry["id"]
    assert all(len(entry["commit"]) >= 10 and entry["reason"] for entry in corpus.get("quiet", ()))
