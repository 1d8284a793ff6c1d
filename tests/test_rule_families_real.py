"""The rule families of issue 18 on the real ExecuTorch tree (runs when a fetched mirror is present).

Each expectation is written from reading the Aug 2026 tree (refs/heads/main of the mirror): the
edit applied in memory is the one the issue names, and what must be reported was checked by hand
in the files cited.
"""

from __future__ import annotations

import pytest

import checks
from bot import pipeline
from bot.buck.graph_cache import EvaluationCache
from bot.patch import apply_diff
from bot.repo import GitRepository


def _review_edit(mirror, diff: str, rules: tuple[str, ...], cache_dir):
    selected = tuple(checks.BY_ID[rule] for rule in rules)
    with GitRepository(mirror) as repo:
        base = repo.tree(repo.resolve("refs/heads/main"))
        head = apply_diff(base, diff)
        return pipeline.review_trees(base, head.tree, head.changes, checks=selected, cache=EvaluationCache(cache_dir))


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


def test_tensor_attribute_back_in_cuda_shims_is_a_duplicate_symbol(executorch_mirror, real_tree_cache):
    report = _review_edit(executorch_mirror, TENSOR_ATTRIBUTE_BACK, ("link-duplicate-symbol",), real_tree_cache)
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


def _corpus() -> dict:
    import tomllib
    from pathlib import Path

    return tomllib.loads((Path(__file__).parent / "real_tree" / "corpus" / "rule_families.toml").read_text())


REGRESSIONS = _corpus()["regression"]


def _matches(finding, entry) -> bool:
    paths = {finding.path} | {e.path for e in finding.evidence}
    text = " ".join(filter(None, (finding.target, finding.title, finding.message)))
    return finding.rule == entry["rule"] and entry["path"] in paths and entry["subject"] in text


@pytest.mark.parametrize("entry", REGRESSIONS, ids=[e["id"] for e in REGRESSIONS])
def test_corpus_regression_caught_at_introducer_and_silent_at_fix(entry, executorch_mirror, real_tree_cache):
    selected = (checks.BY_ID[entry["rule"]],)
    cache = {"cache_dir": real_tree_cache}
    broke = pipeline.review_repository(
        executorch_mirror, f"{entry['introducer']}^", entry["introducer"], checks=selected, **cache
    )
    assert [f for f in broke.findings if _matches(f, entry)], [(f.rule, f.path, f.message) for f in broke.findings]
    repaired = pipeline.review_repository(executorch_mirror, f"{entry['fix']}^", entry["fix"], checks=selected, **cache)
    assert not [f for f in repaired.findings if _matches(f, entry)]
    assert not [f for f in broke.findings + repaired.findings if f.rule == "internal-error"]


def test_misspelt_threadpool_gate_is_found_before_its_fix_and_gone_after(executorch_mirror, real_tree_cache):
    # reduce_util.h tested ET_UE_THREADPOOL (a typo of #9144, held-out window) until a84b3c9c15;
    # extension/threadpool/CMakeLists.txt defines ET_USE_THREADPOOL. The fix is in the mining window.
    selected = (checks.BY_ID["gate-macro-misspelt"],)
    with GitRepository(executorch_mirror) as repo:
        before = repo.tree(repo.resolve("a84b3c9c15^"))
        after = repo.tree(repo.resolve("a84b3c9c15"))
    cache = EvaluationCache(real_tree_cache)
    found = pipeline.scan_tree(before, checks=selected, cache=cache).findings
    assert [(f.rule, f.path, f.line, f.target) for f in found] == [
        ("gate-macro-misspelt", "kernels/portable/cpu/util/reduce_util.h", 835, "ET_UE_THREADPOOL")
    ]
    assert found[0].fix is not None and "#ifdef ET_USE_THREADPOOL" in found[0].fix.replacement
    assert not pipeline.scan_tree(after, checks=selected, cache=cache).findings


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


def test_cuda_backend_linked_on_demand_breaks_whole_archive_parity(executorch_mirror, real_tree_cache):
    report = _review_edit(executorch_mirror, WHOLE_ARCHIVE_DROPPED, ("link-whole-parity",), real_tree_cache)
    found = {(f.rule, f.target) for f in report.findings}
    assert ("link-whole-parity", "aoti_cuda_backend") in found, [(f.path, f.line, f.message) for f in report.findings]
    finding = next(f for f in report.findings if f.target == "aoti_cuda_backend")
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/cuda_backend.cpp", 1277) in evidence  # the registering initializer
    assert any(path == "backends/cuda/runtime/targets.bzl" for path, _line in evidence)  # link_whole = True
    assert not [f for f in report.findings if f.rule == "internal-error"]


def test_scan_of_the_aug_2026_tree_reports_only_judged_findings(executorch_mirror, real_tree_cache):
    import tomllib
    from pathlib import Path

    judged = tomllib.loads((Path(__file__).parent / "real_tree" / "scan_rule_families.toml").read_text())
    selected = tuple(checks.BY_ID[rule] for rule in judged["rules"])
    with GitRepository(executorch_mirror) as repo:
        tree = repo.tree(repo.resolve(judged["rev"]))
    report = pipeline.scan_tree(tree, checks=selected, cache=EvaluationCache(real_tree_cache))
    found = sorted((f.rule, f.path, f.line) for f in report.findings)
    assert found == sorted((f["rule"], f["path"], f["line"]) for f in judged["findings"])
    for near in judged["near_miss"]:
        assert not [
            f for f in report.findings if f.rule == near["rule"] and near["subject"] in (f.message + (f.target or ""))
        ]
