"""Reviews with the product's checks: the one place that binds `checks.ALL` to the pipeline.

Everything that needs the product's rules by name (the rules page, `explain`, the Action, the App's
review child and its commands, the tests) reads `CHECKS`/`BY_ID` from here; importing this module
imports the checks. The CLI's reviewing commands use `pr_check.product_checks` instead, which
names the checks without importing them until they run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path

from bot import pipeline
from bot.check import SMOKE_VERIFIED, Check
from bot.config import Config
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree
from pr_check.product_checks import ProductChecks, all_checks, known_rules
from pr_check.review_input import Revisions, resolve

CHECKS: tuple[Check, ...] = all_checks()
BY_ID: Mapping[str, Check] = {check.id: check for check in CHECKS}
# The rules whose findings the GPU smoke job proves or disproves: their inline comments carry its state.
SMOKE_VERIFIED_RULES: frozenset[str] = frozenset(check.id for check in CHECKS if SMOKE_VERIFIED in check.tags)
# Every rule id a config or `--select` may name: the checks' and the engine's own.
KNOWN_RULES: frozenset[str] = known_rules()

review_trees = partial(pipeline.review_trees, checks=ProductChecks())
scan_tree = partial(pipeline.scan_tree, checks=ProductChecks())
default_cache_dir = pipeline.default_cache_dir
Report = pipeline.Report


def review_repository(
    repo_path: str | Path,
    base: str,
    head: str,
    *,
    checks: Sequence[Check] | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    stored_results: bool = True,
    check_jobs: int | None = None,
) -> pipeline.Report:
    """Review base..head of a git repository (no checkout needed), as the App's review child does."""
    with GitRepository(repo_path) as repo:
        given = resolve(repo, Revisions(base, head))
        return pipeline.review_trees(
            given.base,
            given.head,
            given.changes,
            checks=ProductChecks() if checks is None else checks,
            cache=EvaluationCache(cache_dir or default_cache_dir(repo)),
            progress=progress,
            stored_results=stored_results,
            check_jobs=check_jobs,
        )


def load_config(tree: FileTree) -> Config:
    """The base tree's configuration, validated against the product's rule ids."""
    return pipeline.load_config(tree, CHECKS)
