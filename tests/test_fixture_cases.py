"""The seed reviews' situations as fixture PRs; expected findings written by hand from the invariants."""

from __future__ import annotations

from pr_check.review import review_repository


def _findings(report):
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


def test_pr24817_flags_exactly_the_unguarded_cuda_targets_in_xplat(case_repo, tmp_path):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    # extension/cuda becomes visible in xplat through one added BUCK line (non_fbcode_target):
    # two of its targets are CUDA by their own attributes (runtime_api's CUDA external dep,
    # caller_stream's .cu source) and have no guard: one finding at that line, the targets as
    # related locations. cuda_allocator (extension/cuda) and cuda_platform (backends/cuda/runtime,
    # outside the PR's guard dict) are CUDA only through those deps: guarding the two makes them
    # incompatible on CPU-only platforms as buck2 does, so they are named on that finding, not
    # reported as defects of their own.
    assert _findings(report) == {("cuda-guard-missing", "extension/cuda/BUCK", 6, "xplat")}
    exposing = report.findings[0]
    assert {(e.path, e.line) for e in exposing.evidence} == {
        ("extension/cuda/targets.bzl", 4),
        ("extension/cuda/targets.bzl", 11),
        ("extension/cuda/targets.bzl", 18),
        ("backends/cuda/runtime/targets.bzl", 35),
    }
    assert "2 CUDA targets" in exposing.message and "//extension/cuda:caller_stream" in exposing.message
    assert "`//backends/cuda/runtime:cuda_platform`, `//extension/cuda:cuda_allocator`" in exposing.message
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
