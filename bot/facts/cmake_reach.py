"""Which CMake files some build of the repository reads, and which none does.

CMake reads a file only when a configure run reaches it: the project a command line names
(`cmake -S DIR`), then what it `add_subdirectory`s and `include`s under the options set. A
CMake file outside every such run (a template a manual tells users to copy, #3339's
`examples/llm_manual/CMakeLists.txt`) stops no configure, whatever it names.

A file is in reach when, at the revision:
- a profile the review evaluates reads it (the model's `files_read`);
- such a profile reads a CMake file of one of its ancestor directories below the root: the same
  component's build, under options or a toolchain no profile sets (Cadence's HiFi kernels,
  Vulkan's op tests);
- a CI script (bot/facts/build_scope.py's CI files) names its directory, as `cmake -S DIR` does.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from bot.cmake.profiles import profiles_touched
from bot.facts.build_scope import CI_DIRECTORIES, CI_SUFFIXES
from bot.facts.cmake_models import cmake_model
from bot.snapshot import BuildModel, Snapshot


def review_profiles(snap: Snapshot) -> tuple[str, ...]:
    """The configured CMake profiles, and the backend profile of each directory the change touches."""
    touched = profiles_touched(
        [path for change in snap.changes.files for path in (change.path, change.old_path) if path]
    )
    return tuple(dict.fromkeys((*snap.config.cmake_profiles, *touched)))


def unread(model: BuildModel, profiles: Iterable[str], paths: Iterable[str]) -> frozenset[str]:
    """Those of `paths` (CMake files) that no build reads: no profile, no profile's reading of an
    ancestor directory, no CI script."""
    pending = set(paths)
    if not pending:
        return frozenset()
    read_dirs: set[str] = set()
    for profile in profiles:
        read = cmake_model(model, profile).files_read
        pending -= set(read)
        read_dirs.update(posixpath.dirname(path) for path in read)
        if not pending:
            return frozenset()
    read_dirs.discard("")  # the root's reach is the whole tree: it says nothing about a subdirectory
    pending = {path for path in pending if not any(_under(path, directory) for directory in read_dirs)}
    if pending:
        scripts = _ci_texts(model)
        pending = {path for path in pending if not _named_in(posixpath.dirname(path), scripts)}
    return frozenset(pending)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory + "/")


def _ci_texts(model: BuildModel) -> tuple[str, ...]:
    paths = [p for p in model.tree.paths() if p.startswith(CI_DIRECTORIES) and p.endswith(CI_SUFFIXES)]
    return tuple(text for text in (model.text(p) for p in paths) if text)


def _named_in(directory: str, texts: tuple[str, ...]) -> bool:
    if not directory:
        return True
    pattern = re.compile(rf"(?<![\w.-]){re.escape(directory)}(?![\w.-])")
    return any(pattern.search(text) for text in texts)
