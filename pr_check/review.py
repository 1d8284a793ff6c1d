"""Reviews with the product's checks: the one place that binds `checks.ALL` to the pipeline.

Everything else that needs the product's rules (the CLI, the outputs, the rules page, the Action,
`fix`, the App's review child and its `explain` command) reads `CHECKS`/`BY_ID` from here.

The checks are imported at first use, not with this module (about half a CPU second of imports:
tree-sitter grammars, starlark, the C++ and CMake models): a review whose result is already stored
(bot/store/reviews.py) never needs them. The App's fork server preloads them
(webhooks/isolation.py), so its children start with them imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, Any, overload

from bot import pipeline

if TYPE_CHECKING:
    from bot.check import Check

# The product's check set, as the result store keys it: which checks, not their code (the store's
# keys carry the digest of bot/ and checks/, where every product check and `checks.ALL` live).
PRODUCT = "product-checks"


@cache
def _all() -> tuple[Check, ...]:
    import checks

    return tuple(checks.ALL)


class ProductChecks(Sequence["Check"]):
    """`checks.ALL` (less those a request does not want), imported when first iterated; `identity`
    names the set without importing it, for the pipeline's result store."""

    def __init__(self, selected: frozenset[str] | None = None, ignored: frozenset[str] = frozenset()) -> None:
        self._selected = selected
        self._ignored = ignored
        self.identity = (PRODUCT, None if selected is None else tuple(sorted(selected)), tuple(sorted(ignored)))

    @cache  # noqa: B019 - one per request, as long-lived as the request
    def _checks(self) -> tuple[Check, ...]:
        return tuple(
            c for c in _all() if (self._selected is None or c.id in self._selected) and c.id not in self._ignored
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


def __getattr__(name: str) -> Any:
    """CHECKS, BY_ID and SMOKE_VERIFIED_RULES, computed (and the checks imported) on first use."""
    from bot.check import SMOKE_VERIFIED

    values = {
        "CHECKS": lambda: _all(),
        "BY_ID": lambda: {check.id: check for check in _all()},
        # The rules whose findings the GPU smoke job proves or disproves: their inline comments carry its state.
        "SMOKE_VERIFIED_RULES": lambda: frozenset(check.id for check in _all() if SMOKE_VERIFIED in check.tags),
    }
    if name not in values:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = values[name]()
    globals()[name] = value
    return value


if TYPE_CHECKING:
    CHECKS: tuple[Check, ...]
    BY_ID: Mapping[str, Check]
    SMOKE_VERIFIED_RULES: frozenset[str]

review_repository = partial(pipeline.review_repository, checks=ProductChecks())
review_trees = partial(pipeline.review_trees, checks=ProductChecks())
scan_tree = partial(pipeline.scan_tree, checks=ProductChecks())
default_cache_dir = pipeline.default_cache_dir
Report = pipeline.Report


def load_config(tree):
    """The base tree's configuration, validated against the product's rule ids."""
    return pipeline.load_config(tree, _all())
