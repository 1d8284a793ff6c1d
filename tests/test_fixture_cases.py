"""The seed reviews' situations as fixture PRs; expected findings written by hand from the invariants."""

from __future__ import annotations

from pr_check.review import review_repository


def _findings(report):
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


def test_pr24817_flags_exactly_the_unguarded_cuda_targets_in_xplat(case_repo, tmp_path):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    # extension/cuda becomes visible in xplat through one added BUCK line (non_fbcode_target):
    # its three CUDA targets (a CUDA external dep, a .cu source, a dependency on a CUDA target),
    # untouched by the PR, have no guard: one finding at that line, the targets as related
    # locations. In backends/cuda/runtime the PR edits the targets themselves and its guard dict
    # covers runtime_shims and cuda_backend but not cuda_platform: a finding on that target.
    assert _findings(report) == {
        ("cuda-guard-missing", "extension/cuda/BUCK", 6, "xplat"),
        ("cuda-guard-missing", "backends/cuda/runtime/targets.bzl", 35, "xplat"),
    }
    by_path = {f.path: f for f in report.findings}
    exposing = by_path["extension/cuda/BUCK"]
    assert {(e.path, e.line) for e in exposing.evidence} == {
        ("extension/cuda/targets.bzl", 4), ("extension/cuda/targets.bzl", 11), ("extension/cuda/targets.bzl", 18),
    }
    assert "3 CUDA targets" in exposing.message and "//extension/cuda:caller_stream" in exposing.message
    platform = by_path["backends/cuda/runtime/targets.bzl"]
    assert platform.target == "//backends/cuda/runtime:cuda_platform"
    # The package's own guard dict is suggested, last in the call (Starlark wants `**` last).
    assert (platform.fix.line, platform.fix.replacement) == (39, '        visibility = ["PUBLIC"],\n        **cuda_kwargs')
    assert report.smoke.required


def test_pr24643_reports_link_whole_and_the_unmapped_oss_dep(case_repo, tmp_path):
    repo, base, head = case_repo("pr24643-shim-linkage")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert _findings(report) == {
        ("link-whole-without-python-dlopen", "backends/aoti/targets.bzl", 9, "fbcode"),
        ("dep-unknown-external", "extension/pybindings/BUCK", 11, "oss"),
        # cuda_lib compiles pybindings.cpp, which includes runtime/core/error.h, but its only dep
        # (cuda_backend) does not export //runtime/core:core: Buck2's rule holds in fbcode too.
        ("dep-undeclared-header", "extension/pybindings/pybindings.cpp", 1, "fbcode"),
    }
    oss = next(f for f in report.findings if f.rule == "dep-unknown-external")
    # The evidence walks into the macro that added the dep and the table lookup that failed.
    evidence_paths = {e.path for e in oss.evidence}
    assert "shim_et/xplat/executorch/extension/pybindings/pybindings.bzl" in evidence_paths
    assert "shim_et/xplat/executorch/build/env_interface.bzl" in evidence_paths


def test_a_correct_change_is_clean_and_needs_no_gpu(case_repo, tmp_path):
    repo, base, head = case_repo("clean-cpu-target")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert report.findings == ()
    assert not report.smoke.required


def test_second_review_reuses_the_evaluation_cache(case_repo, tmp_path):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    first = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    second = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert _findings(first) == _findings(second)
    assert all(cell.evaluated == 0 for cell in second.stats.cells.values())
    assert any(cell.evaluated > 0 for cell in first.stats.cells.values())


def test_a_change_outside_every_checks_inputs_runs_no_check(case_repo, tmp_path):
    from fixtures.cases import git

    repo, _, base = case_repo("clean-cpu-target")
    (repo / "README.md").write_text("docs only\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "docs")
    report = review_repository(repo, base, "HEAD", cache_dir=tmp_path / "cache")
    # README.md is new (a listing change), so only checks that read Buck files run.
    ran = set(report.stats.checks)
    assert "link-whole-archive-public" not in ran and "gate-else-removed" not in ran
    assert "cuda-guard-missing" in ran
