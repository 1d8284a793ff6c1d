"""Files a build names that do not exist at head: a Buck target's listed sources and headers, and
the paths CMake files name as sources or subdirectories (bot/facts/cmake_named_paths.py).

Outside submodules (their files are not in the tree), and in a review only where the change can
have moved them (bot/facts/change_scope.py: the targets it changed, the files whose existence it flipped).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, flatten
from bot.facts import change_scope
from bot.facts.cmake_named_paths import SOURCE_FILE, cmake_files, cmake_named_paths
from bot.snapshot import BuildModel, Snapshot

_FILE_ATTRIBUTES = ("srcs", "headers", "exported_headers")


def _under_submodule(path: str, submodules: tuple[str, ...]) -> bool:
    return any(path == s or path.startswith(s + "/") for s in submodules)


def _missing(model: BuildModel, path: str, submodules: tuple[str, ...]) -> bool:
    return not model.tree.exists(path) and not model.tree.is_dir(path) and not _under_submodule(path, submodules)


def missing_listed(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[tuple[str, BuckTarget, str, str, str]]:
    """(cell, target, attribute, item as written, repository path) of a file a Buck target lists
    that does not exist at head (outside submodules), among the targets and files the change can affect."""
    # What the change can affect: the targets it changed, and any target's file whose existence
    # it flipped (a deletion or a move far from the targets that name the file).
    listing = change_scope.listing_changes(snap)
    names = None if listing is None else {path.rsplit("/", 1)[-1] for path in listing}
    for cell in CELLS:
        graph = snap.head.cell(cell)
        scope = change_scope.changed_targets(snap, cell)
        for target in graph.targets.values():
            whole = names is None or scope.holds(target)
            for attribute in _FILE_ATTRIBUTES:
                for item in flatten(target.attrs.get(attribute)):
                    if (
                        not isinstance(item, str)
                        or not SOURCE_FILE.search(item)
                        or item.startswith((":", "/", "@", "$"))
                    ):
                        continue
                    if "//" in item or "*" in item:
                        continue
                    if not whole and item.rsplit("/", 1)[-1] not in names:  # type: ignore[operator]
                        continue  # cheaper than the join below, for the many files nobody moved
                    path = posixpath.normpath(posixpath.join(target.package, item))
                    if not whole and path not in listing:  # type: ignore[operator]
                        continue
                    if _missing(snap.head, path, submodules):
                        yield cell, target, attribute, item, path


def missing_named(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[tuple[str, int, str, str, str]]:
    """(CMake file, line, command, path, as written) of a path a CMake file names that does not
    exist at head (outside submodules), among the files and paths the change can affect."""
    listing = change_scope.listing_changes(snap)
    paths = [path for path in cmake_files(snap.head) if not _under_submodule(path, submodules)]
    for path, named_paths in cmake_named_paths(snap.head, paths).items():
        # A file the change left alone names the same paths: only those whose existence moved can differ.
        whole = listing is None or path in listing
        for line, command, named, written in named_paths:
            if not whole and named not in listing:  # type: ignore[operator]
                continue
            missing = (
                not snap.head.tree.exists(posixpath.join(named, "CMakeLists.txt"))
                if command == "add_subdirectory"
                else not snap.head.tree.exists(named)
            )
            if (
                not missing
                or _under_submodule(named, submodules)
                or (snap.head.tree.is_dir(named) and command != "add_subdirectory")
            ):
                continue
            yield path, line, command, named, written
