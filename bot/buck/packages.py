"""Which packages a cell reads: build file names, the package listing, `.buckconfig`."""

from __future__ import annotations

import hashlib
import posixpath

from bot.buck.buckconfig import BuckConfig, parse_buckconfig
from bot.buck.cells import cell_named
from bot.tree import FileTree, path_bytes

# --------------------------------------------------------------------------------------------
# Whole cells, with the content cache


def load_buckconfig(tree: FileTree) -> BuckConfig:
    text = tree.read_text(".buckconfig")
    return parse_buckconfig(text) if text else BuckConfig(cells={"root": "."})


def build_file_names(config: BuckConfig, cell: str) -> tuple[str, ...]:
    """The build file names a cell reads, in order of preference (its own, or `.buckconfig`'s)."""
    return cell_named(cell).build_file_names or config.build_file_names


def find_packages(tree: FileTree, config: BuckConfig, cell: str = "oss") -> dict[str, str]:
    """package -> build file, for the root cell (other cells' directories excluded)."""
    order = build_file_names(config, cell)
    names = set(order)
    other_roots = tuple(
        r.strip("/") + "/" for r in config.cells.values() if r not in (".", "./", "") and not r.startswith("..")
    )
    skip_roots = other_roots + tuple(g + "/" for g in (*tree.gitlinks(), *tree.mounts))
    packages: dict[str, str] = {}
    for path in tree.paths():
        base = posixpath.basename(path)
        if base not in names or path.startswith(skip_roots):
            continue
        entry = tree.entry(path)
        if entry is None or entry.is_gitlink:
            continue
        package = posixpath.dirname(path)
        # buildfile names are tried in order: the first present wins.
        current = packages.get(package)
        if current is None or order.index(base) < order.index(posixpath.basename(current)):
            packages[package] = path
    return dict(sorted(packages.items()))


def listing_digest(tree: FileTree, directory: str) -> str:
    """A digest of the paths under `directory` (`"/"` for the root): what glob() results depend on."""
    digest = hashlib.sha1()
    # The sorted listing's range under the directory (a bisection), not a pass over every path:
    # a cell of a new tree asks this for every glob of every package it finds in the store.
    for path in tree.paths_under("" if directory == "/" else directory):
        digest.update(path_bytes(path) + b"\0")
    return digest.hexdigest()


def dependency_version(tree: FileTree, path: str) -> str | None:
    """The version of one input of an evaluation: a file's blob id, or a directory listing's digest."""
    return listing_digest(tree, path) if path.endswith("/") else tree.blob_id(path)
