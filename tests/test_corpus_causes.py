"""The six causes of issue 24, each pinned on the real commit it names (skips without a mirror).

Expectations are written from the defect as read in the commit: the file a build names that a
rename left behind, the directory an add_subdirectory names after a move, and so on; each is
also silent at the commit that repaired it.
"""

from __future__ import annotations


def _review(real_review, sha):
    return real_review(f"{sha}^", sha).findings


def test_cadence_rename_leaves_cmake_pointing_at_reference(real_review):
    # Cause 1: 5bf46aae7a renames backends/cadence/reference to generic/; the default branch of
    # backends/cadence/CMakeLists.txt still sets TARGET_DIR reference (fixed in 08c8ed6eb7).
    found = {(f.rule, f.path, f.line) for f in _review(real_review, "5bf46aae7a")}
    assert ("source-missing", "backends/cadence/CMakeLists.txt", 93) in found
    assert ("source-missing", "backends/cadence/CMakeLists.txt", 96) in found
    messages = [
        f.message
        for f in _review(real_review, "5bf46aae7a")
        if f.path == "backends/cadence/CMakeLists.txt" and f.line == 93
    ]
    assert "moved `backends/cadence/reference/kernels` to `backends/cadence/generic/kernels`" in messages[0]
    fixed = _review(real_review, "08c8ed6eb7")
    assert not [f for f in fixed if f.rule == "source-missing"]


def test_arm_tosa_move_leaves_targets_naming_old_files(real_review):
    # Cause 2: f6d90efea9 moves backends/arm/tosa_*.py into tosa/ and leaves backends/arm/TARGETS
    # naming the old files (fixed by f01198f285).
    findings = [f for f in _review(real_review, "f6d90efea9") if f.rule == "source-missing"]
    by_line = {(f.path, f.line, f.target): f.message for f in findings}
    assert ("backends/arm/TARGETS", 40, "//backends/arm:arm_partitioner") in by_line
    assert (
        "moved to `backends/arm/tosa/backend.py`"
        in by_line[("backends/arm/TARGETS", 40, "//backends/arm:arm_partitioner")]
    )
    assert ("backends/arm/TARGETS", 134, "//backends/arm:tosa_utils") in by_line
    fixed = _review(real_review, "f01198f285")
    assert not [f for f in fixed if f.rule == "source-missing"]


def test_three_commas_dropped_from_a_real_targets_file_are_three_errors(executorch_mirror, real_tree_cache):
    # Cause 6: three list items of kernels/portable/cpu/util/targets.bzl (Aug 2026) lose their
    # trailing comma; each error is where the next item starts, and nothing else is flagged.
    import difflib

    from bot.patch import apply_diff
    from bot.repo import GitRepository
    from bot.store.evaluations import EvaluationCache
    from pr_check.review import review_trees

    path = "kernels/portable/cpu/util/targets.bzl"
    with GitRepository(executorch_mirror) as repo:
        base = repo.tree(repo.resolve("refs/heads/main"))
        lines = base.read_text(path).splitlines(keepends=True)
        broken, expected = list(lines), []
        for index in range(len(lines) - 1):
            here, after = lines[index].rstrip("\n"), lines[index + 1]
            apart = not expected or index + 1 > expected[-1][0] + 5  # three different places
            if len(expected) < 3 and here.endswith('",') and after.lstrip().startswith('"') and index > 10 and apart:
                broken[index] = here[:-1] + "\n"
                expected.append((index + 2, len(after) - len(after.lstrip()) + 1))
        diff = f"diff --git a/{path} b/{path}\n" + "".join(
            difflib.unified_diff(lines, broken, f"a/{path}", f"b/{path}", n=0)
        )
        head = apply_diff(base, diff)
        report = review_trees(base, head.tree, head.changes, cache=EvaluationCache(real_tree_cache))
    assert len(expected) == 3
    errors = [f for f in report.findings if f.rule == "parse-error"]
    assert [(f.path, f.line) for f in errors] == [(path, line) for line, _ in expected]
    assert [
        f"line {line}, column {column}:" in f.message for (line, column), f in zip(expected, errors, strict=True)
    ] == [True] * 3


def test_header_only_target_gaining_a_source_is_blamed_for_its_headers_gaps(real_review):
    # Cause 4: ca39d86f4f gives the header-only binary_ops a source (binary_ops.cpp); binary_ops.h's
    # includes of libvec and scalar_utils headers, undeclared since long before, now compile in the
    # target itself. 48e866b90e declared them.
    findings = [f for f in _review(real_review, "ca39d86f4f") if f.rule == "dep-undeclared-header"]
    on_header = {(f.line, f.target): f.message for f in findings if f.path == "kernels/optimized/cpu/binary_ops.h"}
    assert (11, "//kernels/optimized/cpu:binary_ops") in on_header
    assert "//kernels/optimized:libvec" in on_header[(11, "//kernels/optimized/cpu:binary_ops")]
    assert (
        "now compiles `kernels/optimized/cpu/binary_ops.cpp`" in on_header[(11, "//kernels/optimized/cpu:binary_ops")]
    )
    assert (12, "//kernels/optimized/cpu:binary_ops") in on_header  # scalar_utils.h
    fixed = _review(real_review, "48e866b90e")
    assert not [f for f in fixed if f.rule == "dep-undeclared-header" and "libvec" in f.message]


def test_exported_header_including_through_a_private_dep(real_review):
    # Cause 3: 19d22ab8de makes stack_util export stack_util.h, which includes
    # runtime/kernel/kernel_includes.h, while kernel_includes is only among its private deps;
    # 397b8df215 moved it to exported_deps.
    findings = [f for f in _review(real_review, "19d22ab8de") if f.rule == "dep-private-for-exported-header"]
    assert [(f.path, f.line, f.target) for f in findings] == [
        ("kernels/portable/cpu/util/stack_util.h", 11, "//kernels/portable/cpu/util:stack_util")
    ]
    assert "private dep `//runtime/kernel:kernel_includes`" in findings[0].message
    fixed = _review(real_review, "397b8df215")
    assert not [f for f in fixed if f.rule == "dep-private-for-exported-header"]
