"""Reviews with the product's checks: the one place that binds `checks.ALL` to the pipeline.

Everything else that needs the product's rules (the CLI's commands, the outputs, the rules page,
the Action, `fix`, the App's review child and its `explain` command) reads `CHECKS`/`BY_ID` from
here. Importing this module imports the checks (tree-sitter grammars, starlark, the C++ and CMake
models): the CLI imports it only in the commands that review (pr_check/cli.py's command table).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import overload

import checks
from bot import pipeline
from bot.buck.graph_cache import EvaluationCache
from bot.check import SMOKE_VERIFIED, Check
from bot.config import Config
from bot.engine import ENGINE_RULES
from bot.repo import GitRepository
from bot.tree import FileTree
from pr_check.review_input import Revisions, resolve

CHECKS: tuple[Check, ...] = tuple(checks.ALL)
BY_ID: Mapping[str, Check] = {check.id: check for check in CHECKS}
# The rules whose findings the GPU smoke job proves or disproves: their inline comments carry its state.
SMOKE_VERIFIED_RULES: frozenset[str] = frozenset(check.id for check in CHECKS if SMOKE_VERIFIED in check.tags)
# Every rule id a config or `--select` may name: the checks' and the engine's own.
KNOWN_RULES: frozenset[str] = frozenset(BY_ID) | frozenset(ENGINE_RULES)

# The product's check set, as the result store keys it: which checks, not their code (the store's
# keys carry the digest of bot/ and checks/, where every product check and `checks.ALL` live).
PRODUCT = "product-checks"


class ProductChecks(Sequence[Check]):
    """`checks.ALL` less those a request does not want; `identity` names the set for the
    pipeline's result store."""

    def __init__(self, selected: frozenset[str] | None = None, ignored: frozenset[str] = frozenset()) -> None:
        self._selected = selected
        self._ignored = ignored
        self.identity = (PRODUCT, None if selected is None else tuple(sorted(selected)), tuple(sorted(ignored)))

    @cache  # noqa: B019 - one per request, as long-lived as the request
    def _checks(self) -> tuple[Check, ...]:
        return tuple(
            c for c in CHECKS if (self._selected is None or c.id in self._selected) and c.id not in self._ignored
        )

    @overload
    def __getitem__(self, index: int) -> Check: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Check]: ...
    def __getitem__(self, index: int | slice) -> Check | Sequence[Check]:
        return self._checks()[index]

    def __len__(self) -> int:
        return len(self._checks())

    def __iter__(self) -> Iterator[Check]:
        return iter(self._checks())


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
    progress=None,
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
