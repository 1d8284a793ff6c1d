"""Fixes on real ExecuTorch regressions: applied as `pr-check fix` applies them, they remove the
finding, make no new defect, and write what the maintainers wrote in the commit that fixed it.

The fix rounds run on tree ids (`pr_check.fix.fix_until_settled`), in a clone that shares the
mirror's objects, so the mirror itself is never written to. Expectations come from reading the
fixing commit named on each case. Runs when a fetched mirror is present.
"""

from __future__ import annotations

import subprocess

import pytest

from bot.diff import parse_diff
from bot.model import Severity
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache
from pr_check.fix import fix_until_settled
from pr_check.review import review_trees


@pytest.fixture(scope="module")
def shared_clone(executorch_mirror, tmp_path_factory):
    clone = tmp_path_factory.mktemp("shared") / "executorch.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(executorch_mirror), str(clone)], check=True)
    return clone


def _fix_commit(clone, commit: str, cache_dir):
    """Review `commit` against its parent and apply fixes until they settle: the run, and the repo."""
    repo = GitRepository(clone)
    base = repo.resolve(f"{commit}^")
    base_tree = repo.tree(base)
    cache = EvaluationCache(cache_dir)

    def review(tree_id: str):
        head = repo.tree_object(tree_id, tree_id)
        report = review_trees(base_tree, head, parse_diff(repo.diff_trees(base, tree_id)), cache=cache)
        return report, head

    start = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", f"{commit}^{{tree}}"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return fix_until_settled(start, review, repo.tree_with_files), repo


def test_undeclared_header_dep_is_fixed_as_the_maintainers_fixed_it(shared_clone, real_tree_cache):
    # cfd51c25b9 ("Fixing cuda buck") left cuda_backend.cpp including platform/platform.h without
    # depending on :cuda_platform; 12d7518d3a added `":cuda_platform",` first in the sorted deps of
    # cuda_backend in backends/cuda/runtime/TARGETS, one element a line with a trailing comma.
    run, repo = _fix_commit(shared_clone, "cfd51c25b9", real_tree_cache)
    try:
        fixed = {(f.rule, f.path) for f in run.fixed}
        assert ("dep-undeclared-header", "backends/cuda/runtime/cuda_backend.cpp") in fixed
        assert not [f for f in run.report.findings if f.rule == "dep-undeclared-header"]
        known = {f.fingerprint for f in run.first.findings}
        assert not [f for f in run.report.findings if f.severity > Severity.INFO and f.fingerprint not in known]
        patch = repo.diff_trees(run.start, run.final)
        assert [
            line for line in patch.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
        ] == ['+        ":cuda_platform",']
        assert "+++ b/backends/cuda/runtime/TARGETS" in patch
        # The same insertion point as the maintainers' commit: right above ":runtime_shims".
        after = repo.tree_object(run.final, "fixed").read_text("backends/cuda/runtime/TARGETS")
        assert '    deps = [\n        ":cuda_platform",\n        ":runtime_shims",\n' in after
    finally:
        repo.close()


def test_whole_archive_in_public_scope_is_fixed_and_the_finding_is_gone(shared_clone, real_tree_cache):
    # eac0673bd5 linked aoti_common_shims_slim whole in PUBLIC scope of the shared aoti_cuda_shims;
    # 3a00cc1897 moved the pair to PRIVATE scope. The fix must do the same and leave no new defect.
    run, repo = _fix_commit(shared_clone, "eac0673bd5", real_tree_cache)
    try:
        assert ("link-whole-archive-public", "backends/cuda/CMakeLists.txt") in {(f.rule, f.path) for f in run.fixed}
        assert not [f for f in run.report.findings if f.rule == "link-whole-archive-public"]
        known = {f.fingerprint for f in run.first.findings}
        assert not [f for f in run.report.findings if f.severity > Severity.INFO and f.fingerprint not in known]
        patch = repo.diff_trees(run.start, run.final)
        assert set(parse_diff(patch).by_path()) == {"backends/cuda/CMakeLists.txt"}
        removed = [line for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
        added = [line for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
        assert any("PUBLIC" in line for line in removed) or any("PRIVATE" in line for line in added)
        assert any("whole-archive" in line for line in added)
    finally:
        repo.close()
