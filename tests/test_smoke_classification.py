"""When the GPU smoke job is asked for, and how its reasons and its verdict read."""

from __future__ import annotations

import json
import re

from bot.smoke_decision import is_documentation
from fixtures.cases import git
from pr_check.review import review_repository
from smoke.report import StageResult, build_report, describe_report


def _commit(repo, path: str, text: str) -> str:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-qm", f"change {path}")
    return git(repo, "rev-parse", "HEAD")


def test_a_docs_only_change_under_a_cuda_path_does_not_require_the_gpu_job(case_repo, tmp_path):
    repo, _, head = case_repo("clean-cpu-target")
    docs = _commit(repo, "backends/cuda/rocm.md", "# ROCm\n\nNot supported yet.\n")
    report = review_repository(repo, head, docs, cache_dir=tmp_path / "cache")
    assert report.smoke.required is False and report.smoke.reasons == ()
    code = _commit(repo, "backends/cuda/runtime/extra.cpp", "int f() { return 1; }\n")
    assert review_repository(repo, docs, code, cache_dir=tmp_path / "cache").smoke.required is True
    assert is_documentation("backends/cuda/docs/arch.PNG") and not is_documentation("backends/cuda/CMakeLists.txt")


def test_each_cuda_target_is_one_reason_across_cells_and_static_twins(case_repo, tmp_path):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    reasons = review_repository(repo, base, head, cache_dir=tmp_path / "cache").smoke.reasons
    target_reasons = [r for r in reasons if "CUDA target changed" in r]
    assert target_reasons and len(reasons) == len(set(reasons))
    stems = [re.sub(r"_static$", "", re.match(r"`([^`]+)`", r).group(1)) for r in target_reasons]
    assert len(stems) == len(set(stems))  # no target twice, whatever its cells or twin
    assert any("_static`" in r and "cells" in r for r in target_reasons)


def _stage(name: str, status: str) -> StageResult:
    return StageResult(name, status, f"{name} {status}", 0.1, {})


def test_smoke_never_says_passed_when_stages_were_skipped():
    stages = (
        _stage("machine", "passed"),
        _stage("link-contract", "skipped"),
        _stage("canary", "skipped"),
        _stage("host", "skipped"),
    )
    report = build_report({}, stages, {}, {}, None)
    verdict = describe_report(report).splitlines()[-1]
    assert verdict == "smoke: incomplete: 1 of 4 stages passed, 3 skipped (link-contract, canary, host)"
    assert "smoke: passed" not in describe_report(report)
    everything = build_report({}, tuple(_stage(n, "passed") for n in ("machine", "host")), {}, {}, None)
    assert describe_report(everything).splitlines()[-1] == "smoke: passed"
    assert json.dumps(report)  # the document itself is unchanged: status stays the contract's


def test_the_log_lists_a_dozen_changed_functions_what_ran_first_and_counts_the_rest():
    rows = [
        {"path": "backends/cuda/runtime/a.cpp", "line": n, "function": f"f{n}", "ran_on_gpu": n == 30, "how": "x"}
        for n in range(1, 41)
    ]
    report = {"status": "skipped", "stages": [], "backend": {"coverage": rows}}
    changed = [line for line in describe_report(report).splitlines() if line.startswith("    changed:")]
    assert len(changed) == 13 and "a.cpp:30 f30: ran on the GPU" in changed[0]
    assert (
        changed[-1]
        == "    changed: 28 more function(s), 28 of them not reached (backend.coverage in the report lists each)"
    )
