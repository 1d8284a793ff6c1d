"""Whole-review results kept by the digests of the review's inputs (bot/store/reviews.py):
served again for the same inputs, never for different ones, never past a blob that arrived."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from bot.config import Config
from bot.diff import ChangeSet, FileChange
from bot.model import Severity
from bot.store import reviews as review_results
from bot.store.evaluations import EvaluationCache
from bot.tree import memory_tree
from fixtures.cases import CASES, build_case_repository
from pr_check.product_checks import ProductChecks
from pr_check.review import review_repository, review_trees
from tests.test_fact_cache import BUCKCONFIG, _missing_then_present_tree

ROOT = Path(__file__).resolve().parents[1]


def _findings(report) -> list[tuple]:
    return [(f.rule, f.path, f.line, f.message) for f in report.findings]


def test_a_second_review_of_the_same_revisions_is_the_stored_result(tmp_path):
    repo, base, head = build_case_repository(sorted(CASES)[0], tmp_path / "repo")
    first = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert first.findings, "the bundled case has findings: the comparison below is not vacuous"
    again = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert _findings(again) == _findings(first)
    assert again.smoke == first.smoke and again.fail_level == first.fail_level
    assert again.stats.checks == first.stats.checks
    # Nothing was evaluated the second time; the cells' sizes are the first review's.
    assert {n: (c.packages, c.targets) for n, c in again.stats.cells.items()} == {
        n: (c.packages, c.targets) for n, c in first.stats.cells.items()
    }
    assert all(c.evaluated == 0 for c in again.stats.cells.values())


def test_the_stored_result_is_what_the_review_serves(tmp_path):
    # Written by hand into the store under the review's key: the pipeline returns it as it is,
    # which is how a warm review skips the models and the checks.
    base, head = memory_tree({}, revision=""), memory_tree({"a.txt": "x\n"})
    changes = ChangeSet((FileChange("a.txt", None, "added", added=frozenset({1})),))
    cache = EvaluationCache(tmp_path)
    checks = ProductChecks()
    key = review_results.review_key(base, head, changes, None, checks)
    assert isinstance(key, str) and len(key) >= 32  # a digest: the product's checks are storable
    planted = review_results.StoredReview(
        findings=(),
        suppressed=(),
        smoke=review_trees(base, head, changes, cache=EvaluationCache(tmp_path / "other")).smoke,
        cells={},
        checks=("planted",),
        unevaluated=(),
        not_blamed={},
        fail_level=Severity.BLOCKER,
        missing=frozenset(),
    )
    review_results.save(cache.facts, key, planted)
    report = review_trees(base, head, changes, cache=EvaluationCache(tmp_path))
    assert report.stats.checks == ("planted",) and report.fail_level is Severity.BLOCKER


def test_any_input_that_differs_gives_another_key():
    base, head = memory_tree({}, revision=""), memory_tree({"a.txt": "x\n"})
    changes = ChangeSet((FileChange("a.txt", None, "added", added=frozenset({1})),))
    key = review_results.review_key(base, head, changes, None, ProductChecks())
    others = {
        "head": review_results.review_key(base, memory_tree({"a.txt": "y\n"}), changes, None, ProductChecks()),
        "changes": review_results.review_key(base, head, ChangeSet(()), None, ProductChecks()),
        "config": review_results.review_key(base, head, changes, Config(), ProductChecks()),
        "checks": review_results.review_key(
            base, head, changes, None, ProductChecks(ignored=frozenset({"dep-unused"}))
        ),
        "selection": review_results.review_key(
            base, head, changes, None, ProductChecks(selected=frozenset({"dep-unused"}))
        ),
    }
    assert key is not None and None not in others.values()
    assert len({key, *others.values()}) == len(others) + 1


def test_checks_outside_the_code_digest_are_never_stored():
    # A check defined here could change behaviour under the same id: the store's code digest
    # (bot/, checks/) does not cover it, so no result of it is kept.
    from checks import ALL

    own = replace(ALL[0], run=lambda snapshot, options: iter(()))
    assert review_results.checks_identity((own,)) is None
    # The product's own check is named by its id and the module and function that run it.
    identity = review_results.checks_identity((ALL[0],))
    assert identity is not None and len(identity) == 1
    assert identity[0][:3] == (ALL[0].id, ALL[0].run.__module__, ALL[0].run.__qualname__)


def test_the_key_is_the_same_in_another_process():
    # Sets of strings iterate in a per-process order (hash randomization); the key must not.
    code = (
        "from bot.config import Config; from bot.store import reviews as r; from bot.tree import memory_tree;"
        "from bot.diff import ChangeSet; from pr_check.product_checks import ProductChecks;"
        "t = memory_tree({'a': 'x'}); c = Config(disabled=frozenset({'dep-unused', 'source-missing', 'gate-else-removed'}));"
        "print(r.review_key(t, t, ChangeSet(()), c, ProductChecks(ignored=frozenset({'a-b', 'c-d', 'e-f'}))))"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1 and keys != {""}


def test_a_result_derived_without_a_blob_is_not_served_once_the_blob_arrives(tmp_path):
    files = {
        ".buckconfig": BUCKCONFIG,
        "lib/defs.bzl": "def lib(name):\n    native.cxx_library(name = name, srcs = [name + '.cpp'])\n",
        "lib/BUCK": 'load(":defs.bzl", "lib")\nlib("core")\n',
    }
    empty = memory_tree({}, revision="")

    def review(present: bool) -> list[str]:
        tree = _missing_then_present_tree(files, "lib/defs.bzl", present)
        return [f.rule for f in review_trees(empty, tree, ChangeSet(()), cache=EvaluationCache(tmp_path)).findings]

    assert review(present=False) == ["buck-eval-error"]  # the load of the missing file fails
    assert review(present=False) == ["buck-eval-error"]  # served while it is still missing
    # The blob arrived: reviewed afresh, the target evaluates and its missing source is reported.
    assert review(present=True) == ["source-missing"]


def test_the_result_is_in_the_store_after_a_review_and_is_not_written_again(tmp_path):
    base, head = memory_tree({}, revision=""), memory_tree({"a.txt": "x\n"})
    changes = ChangeSet((FileChange("a.txt", None, "added", added=frozenset({1})),))
    cache = EvaluationCache(tmp_path)
    key = review_results.review_key(base, head, changes, None, ProductChecks())
    assert cache.facts.store is not None  # an on-disk store, not the in-memory one
    assert isinstance(key, str) and len(key) >= 32
    entry = f"{review_results.FACT}\0{key!r}"
    assert not cache.facts.store.has(entry)
    review_trees(base, head, changes, cache=cache)
    assert cache.facts.store.has(entry)
    # A write replaces the file (a new inode); a read only touches its time (recency for eviction).
    files = sorted((p, p.stat().st_ino) for p in tmp_path.rglob("*.pickle"))
    review_trees(base, head, changes, cache=EvaluationCache(tmp_path), stored_results=False)
    assert sorted((p, p.stat().st_ino) for p in tmp_path.rglob("*.pickle")) == files


def test_a_stored_review_lists_neither_tree(tmp_path):
    # A warm review is keyed by the trees' git ids, so serving it costs the same at 100 packages as
    # at 6,400 (issue 21): neither tree is listed, let alone read.
    from bot.diff import parse_diff
    from bot.repo import GitRepository

    repo_path, base, head = build_case_repository(sorted(CASES)[0], tmp_path / "repo")
    first = review_repository(repo_path, base, head, cache_dir=tmp_path / "cache")
    with GitRepository(repo_path) as repo:
        base_tree, head_tree = repo.tree(base), repo.tree(head)
        changes = parse_diff(repo.diff(base, head))
        again = review_trees(base_tree, head_tree, changes, cache=EvaluationCache(tmp_path / "cache"))
    assert _findings(again) == _findings(first) and first.findings
    assert not base_tree.listed and not head_tree.listed


def test_a_git_tree_is_named_by_its_content(tmp_path):
    from bot.repo import GitRepository

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    (tmp_path / "a.txt").write_text("x\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "same tree")
    (tmp_path / "a.txt").write_text("y\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "another tree")
    with GitRepository(tmp_path) as repo:
        one, same, other = repo.tree("HEAD~2"), repo.tree("HEAD~1"), repo.tree("HEAD")
        assert one.digest() == same.digest() != other.digest()
        assert not one.listed  # named without listing it
        assert one.read_text("a.txt") == "x\n" and one.listed  # listed when a path is asked for
        assert one.digest() == same.digest()  # and its name does not change by being listed
