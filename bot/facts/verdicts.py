"""A rule's verdict over one whole revision, kept in the store for later reviews.

Some rules judge every target of a tree in one pass, and that pass costs more than reading its
answer back (the header gaps, the gate tables over every CMake model): their verdict is kept under
the tree's content digest and the configuration, so the review's other revision, when its tree is
the same, and every later review of that tree read it instead. This is the one place that decides
that such a verdict is persisted and under which key (the rule's id and what it is per, if anything).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from bot.facts import revision

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

T = TypeVar("T")


def whole_tree(model: BuildModel, rule: str, compute: Callable[[], T], *per: object) -> T:
    """`compute()`, a rule's verdict over the revision (per `per`, e.g. a cell), computed once a tree."""
    return revision.tree_memo(model, (rule, *per), compute, persist=True)
