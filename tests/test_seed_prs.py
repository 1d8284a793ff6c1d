"""The seed PRs rebuilt on the Aug 2026 tree (bench/seed_prs/), reviewed item by item against the
two LLM reviews in ../shared/seeds/ (run when a mirror is present).

Every item a tool can detect is pinned at the file the LLM review named (as the finding's path
or one of its evidence paths), including #24643 item 3, which no configured target shows on the
commit as posted (no target passes `use_cuda = True`): `dep-undeclared-latent` evaluates the
edited branch for the macro's callers. No blocker or major may be false: the exact set of
blocker and major findings is pinned.

The reviews run as the CLI does by default: with the compiled tier on where a compiler is found.
The items the compiler can decide are pinned as the compiler's (#24817 item 1c: `cuda_allocator.cpp`
on xplat's CPU-only platforms stops at `#include <cuda_runtime.h>`), and a prediction it cannot
check says so (#24643 item 3).
"""

from __future__ import annotations

import pytest

from bench.seed_prs import SEED_PRS, build_commits, review_seed
from bot.model import EvidenceRole
from bot.toolchain.runner import discover

TOOLCHAIN = discover()


@pytest.fixture(scope="module")
def reviews(executorch_mirror, real_tree_cache, tmp_path_factory):
    repo, commits = build_commits(executorch_mirror, tmp_path_factory.mktemp("seed-prs"))
    return {pr.number: review_seed(repo, commits, pr, real_tree_cache) for pr in SEED_PRS}


def _found(report, rule: str, path: str, subject: str = "") -> bool:
    """A finding of `rule` at `path` (or with evidence there) whose target or message names `subject`."""
    return any(
        f.rule == rule
        and (f.path == path or any(e.path == path for e in f.evidence))
        and (subject in (f.target or "") or subject in f.message)
        for f in report.findings
    )


def _loud(report) -> set[tuple[str, str, str]]:
    return {(f.rule, f.path, f.target or "") for f in report.findings if f.severity.label in ("blocker", "major")}


# --- #24817 (review: "Request Changes", 44 min) -------------------------------------------------

# "Most newly exposed CUDA targets have no has_cuda guard": six targets. On the Aug 2026 tree
# extension/cuda:cuda_allocator and the deprecated backends/cuda/runtime:cuda_allocator are one
# target (bench/seed_prs/README.md). slim/c10/cuda:exception is CUDA only through runtime_api:
# guarding runtime_api makes it incompatible, so it is named on runtime_api's finding.
GUARD_ITEMS = [
    ("extension/cuda/targets.bzl", "//extension/cuda:runtime_api"),
    ("extension/cuda/targets.bzl", "//extension/cuda:caller_stream"),
    ("backends/cuda/runtime/targets.bzl", "//backends/cuda/runtime:cuda_allocator"),
    ("backends/aoti/slim/cuda/targets.bzl", "//backends/aoti/slim/cuda:guard"),
    ("backends/aoti/slim/c10/cuda/targets.bzl", "//backends/aoti/slim/c10/cuda:exception"),
]


@pytest.mark.parametrize("path,subject", GUARD_ITEMS, ids=[s for _, s in GUARD_ITEMS])
def test_24817_unguarded_cuda_targets(reviews, path, subject):
    assert _found(reviews[24817], "cuda-guard-missing", path, subject)


def test_24817_the_select_guarded_slimtensor_layer_is_not_a_cuda_target_on_cpu(reviews):
    # The seven false blockers of 0adf87b: storage's CUDA deps sit under select(has_cuda).
    flagged = {f.target for f in reviews[24817].findings if f.rule == "cuda-guard-missing"}
    for label in (
        "//backends/aoti/slim/core:storage",
        "//backends/aoti/slim/core:slimtensor",
        "//backends/aoti/slim/factory:empty",
        "//backends/aoti/slim/factory:from_blob",
        "//backends/aoti/slim/factory:from_etensor",
        "//backends/aoti:common_shims_slim",
        "//backends/aoti:aoti_common_slim",
    ):
        assert label not in flagged
        assert not any(label in f.message for f in reviews[24817].findings if f.rule == "cuda-guard-missing")


def test_24817_guard_fixes_follow_the_package(reviews):
    fixes = {f.target: f.fix for f in reviews[24817].findings if f.rule == "cuda-guard-missing"}
    # backends/cuda/runtime has a guard dict: the stub gets it, nothing else.
    assert fixes["//backends/cuda/runtime:cuda_allocator"].replacement.endswith("**cuda_kwargs")
    # extension/cuda's targets.bzl is read by fbcode and OSS too: the guard applies outside fbcode only.
    caller_stream = fixes["//extension/cuda:caller_stream"].replacement
    assert (
        '**({} if is_fbcode() else {"compatible_with": ["ovr_config//cuda:has_cuda"], "platforms": [CXX]})'
        in caller_stream
    )
    assert 'load("@fbsource//tools/build_defs:platform_defs.bzl", "CXX")' in caller_stream


def test_24817_export_dynamic_does_not_travel_with_the_shims(reviews):
    assert _found(reviews[24817], "link-export-dynamic-missing", "backends/cuda/runtime/targets.bzl", "runtime_shims")
    # The review also names backends/aoti/targets.bzl (common_shims_slim): in fbcode, where it links shared, a minor.
    assert any(
        f.rule == "link-export-dynamic-missing"
        and f.path == "backends/aoti/targets.bzl"
        and f.target == "//backends/aoti:common_shims_slim"
        and (f.cell, f.severity.label) == ("fbcode", "minor")
        for f in reviews[24817].findings
    )


def test_24817_no_arch_flags_outside_fbcode_for_the_sm80_kernels(reviews):
    assert _found(reviews[24817], "cell-arch-flags-missing", "backends/cuda/runtime/targets.bzl", "runtime_shims")


def test_24817_cuda_lib_is_public_next_to_libtorch(reviews):
    assert _found(reviews[24817], "shim-public-visibility", "extension/pybindings/BUCK", "cuda_lib")


def test_24817_cuda_lib_breaks_the_oss_load_of_extension_pybindings(reviews):
    assert any(
        f.cell == "oss" and f.severity.label == "minor" and "extension/pybindings" in (f.target or f.path)
        for f in reviews[24817].findings
    )


def test_24817_item6_the_new_configurations_are_never_built_by_a_test(reviews):
    # The review: "Every Buck test in the touched packages sits behind `if not is_fbcode: return`
    # (backends/cuda/runtime/targets.bzl:166). The xplat has_cuda build is therefore never compiled
    # or linked." The CUDA backend newly builds in xplat only on the has_cuda platform; its tests
    # (test_cuda_mutable_state, after the early return) build only in fbcode.
    found = {f.path: f for f in reviews[24817].findings if f.rule == "test-configuration-missing" and f.cell == "xplat"}
    backend = found["backends/cuda/runtime/targets.bzl"]
    assert (backend.target, backend.severity.label) == ("//backends/cuda/runtime:cuda_backend", "minor")
    assert "`linux-x86_64-cuda`" in backend.message and "android" not in backend.message
    assert any(
        e.path == "backends/cuda/runtime/targets.bzl" and "test_cuda_mutable_state" in e.note and "fbcode" in e.note
        for e in backend.evidence
    )
    # One finding per package holding a root of what is new and untested, not one per target:
    # on the CPU-only platforms the shim layer (aoti_common_slim) and the SlimTensor factories,
    # defined in xplat by the change, are the roots; what they build on is listed on them.
    assert set(found) == {
        "backends/cuda/runtime/targets.bzl",
        "backends/aoti/targets.bzl",
        "backends/aoti/slim/factory/targets.bzl",
    }
    assert found["backends/aoti/targets.bzl"].target == "//backends/aoti:aoti_common_slim"
    assert "`android-arm64`" in found["backends/aoti/targets.bzl"].message
    assert all(f.cell == "xplat" for f in reviews[24817].findings if f.rule == "test-configuration-missing")


def test_24817_no_false_blocker_or_major(reviews):
    compiled = set()
    if TOOLCHAIN is not None:
        # `//backends/aoti/slim/c10/macros:macros` lists Macros.h in plain `headers`, which
        # outside fbcode its dependents do not see; Exception.h (exported by c10/cuda:exception,
        # defined outside fbcode by this change) includes it, so in xplat every source including
        # Exception.h stops there (guard.cpp on all four platforms, runtime_shims' cuda_guard.cpp
        # where it builds, with CUDA). True on the reconstruction; not an LLM item.
        compiled |= {
            ("compile-error-new", "backends/aoti/slim/c10/cuda/Exception.h", "//backends/aoti/slim/cuda:guard"),
            ("compile-error-new", "backends/aoti/slim/c10/cuda/Exception.h", "//backends/cuda/runtime:runtime_shims"),
        }
        if TOOLCHAIN.cuda_include is not None:  # item 1c, as the compiler says it (below)
            compiled.add(
                ("compile-error-new", "extension/cuda/runtime_api.h", "//backends/cuda/runtime:cuda_allocator")
            )
    assert _loud(reviews[24817]) == compiled | {
        ("cuda-guard-missing", "extension/cuda/targets.bzl", "//extension/cuda:runtime_api"),
        ("cuda-guard-missing", "extension/cuda/targets.bzl", "//extension/cuda:caller_stream"),
        ("cuda-guard-missing", "backends/cuda/runtime/targets.bzl", "//backends/cuda/runtime:cuda_allocator"),
        ("cuda-guard-missing", "backends/aoti/slim/cuda/targets.bzl", "//backends/aoti/slim/cuda:guard"),
        ("link-export-dynamic-missing", "backends/cuda/runtime/targets.bzl", "//backends/cuda/runtime:runtime_shims"),
    }


@pytest.mark.skipif(TOOLCHAIN is None or TOOLCHAIN.cuda_include is None, reason="no C++ compiler or CUDA headers")
def test_24817_item1c_the_compiler_agrees_cuda_allocator_does_not_compile_without_cuda(reviews):
    # cuda_allocator.cpp includes runtime_api.h, whose non-HIP branch includes <cuda_runtime.h>
    # (line 160); xplat builds the unguarded target on its CPU-only platforms, which give no CUDA.
    (found,) = [
        f
        for f in reviews[24817].findings
        if f.rule == "compile-error-new" and f.target == "//backends/cuda/runtime:cuda_allocator"
    ]
    assert (found.path, found.line, found.cell, found.severity.label) == (
        "extension/cuda/runtime_api.h",
        160,
        "xplat",
        "blocker",
    )
    assert "`extension/cuda/runtime_api.h:160: error: cuda_runtime.h: No such file or directory`" in found.message
    for platform in ("android-arm64", "iphoneos-arm64", "linux-x86_64"):
        assert f"`xplat {platform}`" in found.message
    assert "`xplat linux-x86_64-cuda`" not in found.message


def test_24817_no_dep_private_minors_in_fbcode(reviews):
    # Issue 33: rebuilt on the real tree, #24817 drew 31 fbcode dep-private-for-exported-header
    # minors predicting that dependents fail, where fbcode shows plain `headers` to dependents at
    # base and at head and no dependent fails. None is posted, in any cell.
    assert not [f for f in reviews[24817].findings if f.rule == "dep-private-for-exported-header"]


# --- #24643 as first posted (review: "Needs Discussion", 16 min) ---------------------------------


def test_24643_item1_link_whole_without_python_dlopen(reviews):
    assert _found(reviews[24643], "link-whole-without-python-dlopen", "backends/aoti/targets.bzl", "common_shims_slim")


def test_24643_item2_export_dynamic(reviews):
    # fbcode links common_shims_slim as a shared object, so no binary breaks yet: a minor with the fix.
    found = [
        f
        for f in reviews[24643].findings
        if f.rule == "link-export-dynamic-missing" and f.path == "backends/aoti/targets.bzl"
    ]
    assert [(f.target, f.cell, f.severity.label) for f in found] == [
        ("//backends/aoti:common_shims_slim", "fbcode", "minor")
    ]
    assert 'exported_linker_flags = ["-Wl,--export-dynamic"]' in found[0].fix.replacement


def test_24643_item3_use_cuda_misses_cuda_allocator(reviews):
    # No target passes use_cuda = True on the commit as posted (its review: "the pybindings.bzl
    # change is never built here"), so dep-undeclared-header, which reviews configured targets,
    # cannot see it. The change edits the use_cuda branch; evaluated for the macro's callers with
    # use_cuda set, pybindings_cuda.h includes cuda_allocator.h, which the branch's deps lack.
    found = [f for f in reviews[24643].findings if f.rule == "dep-undeclared-latent"]
    assert [(f.path, f.severity.label) for f in found] == [
        ("shim_et/xplat/executorch/extension/pybindings/pybindings.bzl", "minor")
    ]
    assert "cuda_allocator" in found[0].message
    assert any(e.path == "extension/pybindings/pybindings_cuda.h" for e in found[0].evidence)
    if TOOLCHAIN is not None:
        # Not confirmed by the compiler, and it says so: the reconstruction gives
        # pybindings_cuda.h no owning target, so the compile of pybindings.cpp (the `_C` source
        # that includes it under the branch's define) stops at pybindings_cuda.h itself and
        # never reaches cuda_allocator.h. The prediction stands as the rule made it.
        assert "Not checked by the compiler: no compiled source in `fbcode` reaches the include" in found[0].message
        assert not any(e.role is EvidenceRole.COMPILER for e in found[0].evidence)


def test_24817_has_no_latent_branch_finding(reviews):
    # #24817's diff carries the stacked #24643, whose cuda_lib calls executorch_pybindings(use_cuda = True)
    # with the cuda_allocator dep: the branch is built, and the gap is closed.
    assert not [f for f in reviews[24817].findings if f.rule == "dep-undeclared-latent"]


def test_24643_testing_item(reviews):
    assert _found(reviews[24643], "test-missing", "backends/aoti/targets.bzl", "common_shims_slim")


def test_24643_builds_nothing_in_a_new_configuration(reviews):
    # #24643 changes link attributes of fbcode targets only: no target builds anywhere new.
    assert not [f for f in reviews[24643].findings if f.rule == "test-configuration-missing"]


def test_24643_no_false_blocker_or_major(reviews):
    # The deleted tensor_attribute.cpp is what keeps the two force-linked shim sets from colliding.
    assert _loud(reviews[24643]) == set()
