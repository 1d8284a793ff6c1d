"""Real regressions from ExecuTorch history: each caught where it was introduced, silent at its fix.

Each pair was found by reading history: a later commit fixed or reverted what an earlier one
broke (its message or diff says so). The expectation is the rule and the file the defect lives
in, written from that reading; runs when a fetched mirror is present.
"""

from __future__ import annotations

import pytest

REGRESSIONS = [
    # //backends/xnnpack/test loads shim_et/xplat/caffe2/pt_defs.bzl, absent from the open-source tree;
    # OSS CI queries //backends/xnnpack/...; "Shim LI op defs in OSS" (6bac07efba) repaired it.
    ("bf4dfaf835", "6bac07efba", "buck-eval-error", "backends/xnnpack/test/BUCK"),
    # aoti_cuda_shims (shared) links aoti_common_shims_slim whole in PUBLIC scope, replayed at every
    # consumer's link; "Ship the CUDA delegate in the wheel" (3a00cc1897) made it PRIVATE.
    ("eac0673bd5", "3a00cc1897", "link-whole-archive-public", "backends/cuda/CMakeLists.txt"),
    # platform.cpp joins CMake's aoti_cuda but no Buck target; "Fixing cuda buck" (cfd51c25b9) added
    # the Buck cuda_platform target the next day.
    ("caa35f67dc", "cfd51c25b9", "source-parity", "backends/cuda/CMakeLists.txt"),
    # ... which cuda_backend.cpp includes (platform/platform.h) without depending on it; "Fix missing
    # deps in CUDA backend TARGETS" (12d7518d3a) added the dep.
    ("cfd51c25b9", "12d7518d3a", "dep-undeclared-header", "backends/cuda/runtime/cuda_backend.cpp"),
]


@pytest.mark.parametrize(("introduced", "fixed", "rule", "path"), REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_real_regression_caught_and_then_fixed(introduced, fixed, rule, path, real_review):
    broke = real_review(f"{introduced}^", introduced)
    assert (rule, path) in {(f.rule, f.path) for f in broke.findings}
    repaired = real_review(f"{fixed}^", fixed)
    assert (rule, path) not in {(f.rule, f.path) for f in repaired.findings}
    assert not [f for f in broke.findings + repaired.findings if f.rule == "internal-error"]


def test_cuda_target_added_to_vulkan_is_seen_in_xplat(executorch_mirror, real_tree_cache):
    # Issue cause 5: backends/vulkan used to fail to evaluate in xplat (a select() of strings
    # concatenated to a string), so a CUDA target added there drew no finding. The change is
    # applied to the Aug 2026 tree in memory.
    from bot.patch import apply_diff
    from bot.repo import GitRepository
    from bot.store.evaluations import EvaluationCache
    from pr_check.review import review_trees

    diff = (
        "diff --git a/backends/vulkan/BUCK b/backends/vulkan/BUCK\n"
        "--- a/backends/vulkan/BUCK\n+++ b/backends/vulkan/BUCK\n"
        "@@ -15,0 +16,2 @@ fbcode_target(_kind = define_common_targets,is_fbcode = True)\n"
        "+\n"
        '+non_fbcode_target(_kind = native.cxx_library, name = "vk_cuda_interop", srcs = ["cuda_interop.cu"])\n'
    )
    with GitRepository(executorch_mirror) as repo:
        base = repo.tree(repo.resolve("refs/heads/main"))
        head = apply_diff(base, diff)
        report = review_trees(base, head.tree, head.changes, cache=EvaluationCache(real_tree_cache))
    found = {(f.rule, f.path, f.line, f.cell) for f in report.findings}
    assert ("cuda-guard-missing", "backends/vulkan/BUCK", 17, "xplat") in found
    assert not [f for f in report.findings if f.rule == "internal-error"]
