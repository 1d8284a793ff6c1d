"""`pr-check cache info|clean`: where a repository's evaluation and fact cache is, its size, or empty it."""

from __future__ import annotations

import argparse

from bot.pipeline import default_cache_dir
from bot.repo import GitRepository
from bot.store.disk import DiskStore


def run_cache(arguments: argparse.Namespace) -> int:
    """Print the cache's place, entries and size (after emptying it, for `clean`)."""
    if arguments.cache_dir is not None:
        directory = arguments.cache_dir
    else:
        with GitRepository(arguments.repo) as repo:
            directory = default_cache_dir(repo)
    store = DiskStore.at(directory)
    if arguments.action == "clean":
        store.clean()
    info = store.info()
    print(
        f"cache: {info.directory}\nentries: {info.entries}\nsize: {info.bytes / 1e6:.1f} MB of {info.bound / 1e6:.0f} MB "
        "(least recently used entries go first)"
    )
    return 0
