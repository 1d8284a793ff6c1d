"""Reviews with the product's checks: the one place that binds `checks.ALL` to the pipeline."""

from __future__ import annotations

from functools import partial

import checks
from bot import pipeline

review_repository = partial(pipeline.review_repository, checks=checks.ALL)
review_trees = partial(pipeline.review_trees, checks=checks.ALL)
scan_tree = partial(pipeline.scan_tree, checks=checks.ALL)
default_cache_dir = pipeline.default_cache_dir
Report = pipeline.Report


def load_config(tree):
    """The base tree's configuration, validated against the product's rule ids."""
    return pipeline.load_config(tree, checks.ALL)
