"""Reviews with the product's checks: the one place that binds `checks.ALL` to the pipeline.

Everything else that needs the product's rules (the CLI, the outputs, the rules page, the Action,
`fix`, the App's review child and its `explain` command) reads `CHECKS`/`BY_ID` from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import checks
from bot import pipeline
from bot.check import SMOKE_VERIFIED, Check

CHECKS: tuple[Check, ...] = tuple(checks.ALL)
BY_ID: Mapping[str, Check] = {check.id: check for check in CHECKS}
# The rules whose findings the GPU smoke job proves or disproves: their inline comments carry its state.
SMOKE_VERIFIED_RULES = frozenset(check.id for check in CHECKS if SMOKE_VERIFIED in check.tags)

review_repository = partial(pipeline.review_repository, checks=CHECKS)
review_trees = partial(pipeline.review_trees, checks=CHECKS)
scan_tree = partial(pipeline.scan_tree, checks=CHECKS)
default_cache_dir = pipeline.default_cache_dir
Report = pipeline.Report


def load_config(tree):
    """The base tree's configuration, validated against the product's rule ids."""
    return pipeline.load_config(tree, CHECKS)
