"""The real `shim/` submodule's files mounted into a revision, where they can be had.

ExecuTorch pins facebook/buck2-shims-meta as the gitlink `shim` (the root of the `.buckconfig`
cell `shim`). A revision read from git has only the pinned commit there; with the shim's files
mounted, the open-source cell evaluates them instead of the built-in equivalents
(`bot/buck/stand_ins.py`). Where no source has the pinned commit the tree stays as it is and the
built-ins stand in.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.buck.buckconfig import parse_buckconfig
from bot.tree import FileTree, mount

# The cell that `.buckconfig` maps to the submodule, and the path used when it declares none.
SHIM_CELL = "shim"
DEFAULT_SHIM_PATH = "shim"


def shim_gitlink(tree: FileTree) -> tuple[str, str] | None:
    """(path, pinned commit) of the shim submodule in `tree`, or None when it has none."""
    text = tree.read_text(".buckconfig")
    root = parse_buckconfig(text).cell_root(SHIM_CELL) if text else None
    path = (root or DEFAULT_SHIM_PATH).strip("/").removeprefix("./")
    commit = tree.gitlinks().get(path)
    return (path, commit) if commit else None


def with_shim(tree: FileTree, tree_at: Callable[[str], FileTree | None]) -> FileTree:
    """`tree` with the shim's files (`tree_at(pinned commit)`) mounted at its gitlink."""
    gitlink = shim_gitlink(tree)
    if gitlink is None:
        return tree
    path, commit = gitlink
    files = tree_at(commit)
    return tree if files is None else mount(tree, path, files)
