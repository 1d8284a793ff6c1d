"""bot/render/finding_groups.py: near-duplicates become one entry with the list of places; distinct defects stay apart."""

from __future__ import annotations

from bot.model import Evidence, Finding, Severity
from bot.render.finding_groups import FindingGroup, capped, group_findings


def finding(
    rule: str,
    path: str,
    line: int,
    target: str | None,
    message: str,
    severity: Severity = Severity.MINOR,
    cell: str | None = "fbcode",
    evidence: tuple[Evidence, ...] = (),
) -> Finding:
    fingerprint = f"{rule}-{path}-{line}-{target}"
    return Finding(rule, severity, "t", path, line, line, message, fingerprint, target, cell, evidence)


def test_one_macro_call_making_two_targets_is_one_entry_naming_both():
    # extension/tensor/targets.bzl makes :tensor and :tensor_aten from one call (line 8).
    tensor = finding(
        "cuda-guard-missing", "extension/tensor/targets.bzl", 8, "//extension/tensor:tensor",
        "`//extension/tensor:tensor` compiles `a.cu` and has 71 CPU-only dependents",
        Severity.BLOCKER,
    )  # fmt: skip
    aten = finding(
        "cuda-guard-missing", "extension/tensor/targets.bzl", 8, "//extension/tensor:tensor_aten",
        "`//extension/tensor:tensor_aten` compiles `a.cu` and has 12 CPU-only dependents",
        Severity.BLOCKER,
    )  # fmt: skip
    (group,) = group_findings([aten, tensor])
    assert group.lead == tensor  # first by target name at the same place
    assert group.targets == ("//extension/tensor:tensor", "//extension/tensor:tensor_aten")
    assert group.places == (("extension/tensor/targets.bzl", 8),)


def test_the_includes_of_one_exported_header_are_one_entry_with_every_line():
    lines = [
        finding("dep-private-for-exported-header", "a/utils.h", n, "//a:shims", f"`a/utils.h` includes `h{n}.h`")
        for n in (11, 14, 15)
    ]
    other_header = finding("dep-private-for-exported-header", "a/memory.h", 3, "//a:shims", "`a/memory.h` includes")
    groups = group_findings([*lines, other_header])
    assert [g.places for g in groups] == [
        (("a/memory.h", 3),),
        (("a/utils.h", 11), ("a/utils.h", 14), ("a/utils.h", 15)),
    ]


def test_two_defects_of_one_target_in_a_build_file_stay_two():
    # Two different missing deps of one target, both reported at its call line: not one point per target.
    first = finding("dep-undeclared-header", "BUCK", 4, "//a:lib", "`a.cpp` includes `x.h`, owned by `//x:x`")
    second = finding("dep-undeclared-header", "BUCK", 4, "//a:lib", "`a.cpp` includes `y.h`, owned by `//y:y`")
    assert len(group_findings([first, second])) == 2
    # Lines of a build file are separate defects even on one target.
    third = finding("dep-unused", "BUCK", 9, "//a:lib", "`//z:z` is not used")
    fourth = finding("dep-unused", "BUCK", 10, "//a:lib", "`//w:w` is not used")
    assert len(group_findings([third, fourth])) == 2


def test_the_same_include_seen_by_two_rules_is_one_entry_led_by_the_more_severe():
    undeclared = finding("dep-undeclared-header", "a/x.h", 5, "//a:user", "m", Severity.MAJOR)
    private = finding("dep-private-for-exported-header", "a/x.h", 5, "//a:x", "n", Severity.MINOR)
    (group,) = group_findings([private, undeclared])
    assert group.lead == undeclared
    assert group.rules == ("dep-undeclared-header", "dep-private-for-exported-header")
    assert group.severity is Severity.MAJOR


def test_unrelated_findings_stay_apart_and_every_finding_is_in_exactly_one_group():
    items = [
        finding("cuda-guard-missing", "a/BUCK", 3, "//a:x", "m", Severity.BLOCKER),
        finding("cell-arch-flags-missing", "a/BUCK", 3, "//a:x", "m"),
        finding("dep-unknown-external", "b/BUCK", 7, "//b", "m", cell="oss"),
    ]
    groups = group_findings(items)
    assert len(groups) == 3
    assert sorted(m.fingerprint for g in groups for m in g.members) == sorted(f.fingerprint for f in items)


def test_group_evidence_lists_each_location_once():
    shared = Evidence("BUCK", 1, "defined here")
    a = finding("r", "x.h", 1, "//a:a", "m", evidence=(shared, Evidence("x.h", 1, "include")))
    b = finding("r", "x.h", 2, "//a:a", "m", evidence=(shared, Evidence("x.h", 2, "include")))
    group = FindingGroup(a, (b,))
    assert group.evidence == (shared, Evidence("x.h", 1, "include"), Evidence("x.h", 2, "include"))


def test_capped_says_how_many_more():
    assert capped(["a", "b"], 3) == ["a", "b"]
    assert capped(["a", "b", "c", "d"], 3) == ["a", "b", "and 2 more"]


def test_one_load_error_failing_many_packages_is_one_entry_other_errors_stay_apart():
    # #8607 points `fbsource` at shim_et/ before runtime_wrapper.bzl is there: every package that
    # loads it fails the same way, CI-reached ones at blocker, the others at minor.
    error = "cannot load shim_et/xplat/executorch/build/runtime_wrapper.bzl: no such file in the repository"

    def failed(package: str, severity: Severity, why: str = error, cell: str = "oss") -> Finding:
        message = f"`//{package}` fails to evaluate in the `{cell}` cell: {why}. Every target of the package is missing"
        return finding("buck-eval-error", f"{package}/TARGETS", 4, f"//{package}", message, severity, cell)

    runtime = failed("runtime/core", Severity.BLOCKER)
    unreached = failed("runtime/core/test", Severity.MINOR)
    other_error = failed("examples/xnnpack", Severity.BLOCKER, "target `a` is defined twice in `//examples/xnnpack`")
    other_cell = failed("runtime/kernel", Severity.BLOCKER, cell="fbcode")
    groups = group_findings([unreached, other_error, runtime, other_cell])
    assert [g.members for g in groups if len(g.members) > 1] == [(runtime, unreached)]
    assert len(groups) == 3


def test_one_header_line_failing_several_translation_units_is_one_compile_entry():
    # #24817 on the real tree: Exception.h:11 cannot find c10/macros/Macros.h outside fbcode, and both
    # guard.cpp (//backends/aoti/slim/cuda:guard) and cuda_guard.cpp (runtime_shims) include it.
    def failed(source: str, target: str, cell: str = "xplat") -> Finding:
        message = f"`g++` fails to compile `{source}` (built by `{target}`) in android-arm64: `x`."
        path = "backends/aoti/slim/c10/cuda/Exception.h"
        return finding("compile-error-new", path, 11, target, message, Severity.BLOCKER, cell)

    guard = failed("backends/aoti/slim/cuda/guard.cpp", "//backends/aoti/slim/cuda:guard")
    shims = failed("backends/cuda/runtime/shims/cuda_guard.cpp", "//backends/cuda/runtime:runtime_shims")
    elsewhere = failed("backends/cuda/runtime/shims/cuda_guard.cpp", "//backends/cuda/runtime:runtime_shims", "oss")
    guarded = finding(
        "cuda-guard-missing", "backends/aoti/slim/cuda/targets.bzl", 6, guard.target, "m", Severity.BLOCKER
    )
    groups = group_findings([shims, guarded, elsewhere, guard])
    assert [g.members for g in groups if len(g.members) > 1] == [(guard, shims)]
    assert len(groups) == 3  # another cell's failure and the guard finding are other defects
