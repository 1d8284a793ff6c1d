"""Where the CLI finds the real `shim/` files: `--shim PATH`, else an initialized submodule.

`--shim` names a checkout (its files are used as they are) or a git repository of
facebook/buck2-shims-meta (the tree at the commit each revision pins is used). Without it, a
work tree whose `shim/` submodule is initialized is read at the pinned commit. A revision whose
pinned commit no source has keeps the built-in equivalents.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.buck.shim import shim_gitlink, with_shim
from bot.errors import UsageError
from bot.repo import GitRepository, directory_tree
from bot.tree import FileTree


def _is_git_repository(path: Path) -> bool:
    """A work tree's top (`.git` file or directory) or a bare repository, not a folder inside one."""
    return (path / ".git").exists() or ((path / "objects").is_dir() and (path / "HEAD").is_file())


def shim_files(repo: GitRepository, shim: Path | None) -> Callable[[FileTree], FileTree]:
    """A function mounting the shim's files into a revision's tree, per the rules above."""
    if shim is not None:
        if not shim.is_dir():
            raise UsageError(f"--shim {shim}: no such directory")
        if not _is_git_repository(shim):
            checkout = directory_tree(shim)
            return lambda tree: with_shim(tree, lambda _commit: checkout)
        source = GitRepository(shim)

        def pinned(commit: str) -> FileTree:
            if not source.has_commit(commit):
                raise UsageError(f"--shim {shim}: the pinned commit {commit} is not in that repository")
            return source.tree(commit)

        return lambda tree: with_shim(tree, pinned)

    def from_submodule(tree: FileTree) -> FileTree:
        gitlink = shim_gitlink(tree)
        checkout = repo.path / gitlink[0] if gitlink else None
        if checkout is None or not (checkout / ".git").exists():
            return tree
        submodule = GitRepository(checkout)
        return with_shim(tree, lambda commit: submodule.tree(commit) if submodule.has_commit(commit) else None)

    return from_submodule
