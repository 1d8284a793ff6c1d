"""The product's checks (`checks.ALL`) as the review path needs them: named without importing them.

Importing the checks costs about a tenth of a CPU second and more of wall time (tree-sitter
grammars, starlark, the C++ and CMake models); a review whose result is already stored
(bot/store/reviews.py) never runs them, so `pr-check review` on a stored result imports
them only where an option asks for them (`--select`, `--ignore`, `--config`, `--format sarif`).
`pr_check/review.py` binds them for everything else.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import overload

from bot.check import Check
from bot.engine import ENGINE_RULES

# The product's check set, as the result store keys it: which checks, not their code (the store's
# keys carry the digest of bot/ and checks/, where every product check and `checks.ALL` live).
PRODUCT = "product-checks"


@cache
def all_checks() -> tuple[Check, ...]:
    """`checks.ALL`, imported at first use."""
    import checks  # here, not at the top: see the module's docstring

    return tuple(checks.ALL)


@cache
def known_rules() -> frozenset[str]:
    """Every rule id a config or `--select` may name: the checks' and the engine's own."""
    return frozenset(check.id for check in all_checks()) | frozenset(ENGINE_RULES)


class ProductChecks(Sequence[Check]):
    """`checks.ALL` (less those a request does not want), imported when first iterated; `identity`
    names the set without importing it, for the pipeline's result store."""

    def __init__(self, selected: frozenset[str] | None = None, ignored: frozenset[str] = frozenset()) -> None:
        self._selected = selected
        self._ignored = ignored
        self.identity = (PRODUCT, None if selected is None else tuple(sorted(selected)), tuple(sorted(ignored)))

    @cache  # noqa: B019 - one per request, as long-lived as the request
    def _checks(self) -> tuple[Check, ...]:
        return tuple(
            c for c in all_checks() if (self._selected is None or c.id in self._selected) and c.id not in self._ignored
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
