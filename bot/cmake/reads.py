"""What a CMake evaluation asked of the tree, and whether another tree answers the same.

A CMake model is a pure function of its profile, the source lists it is given and the answers the
tree gave it: the contents of the files it read (by blob id), whether paths exist or are
directories, and which paths its globs and `install(DIRECTORY)` matched. Recording those answers
while evaluating makes the model reusable for any tree that gives the same ones, such as the head
of a pull request that changed only Buck files or sources no glob's result depends on, though the
whole-tree digest differs. `TreeReads` is the tree an `Evaluation` reads through; `Reads` is what
it recorded, checked against another tree by `hold_for`.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.tree import FileTree

# The kinds of question, and how another tree answers each.
_BLOB = "blob"  # path -> blob id (None: absent, or a submodule)
_EXISTS = "exists"
_IS_DIR = "is_dir"
_GLOB = "glob"  # (directory prefix, regex) -> the matching paths
_UNDER = "under"  # directory prefix -> digest of the paths below it


@dataclass(frozen=True, slots=True)
class Reads:
    """Every (kind, question, answer) one evaluation got from its tree, in the order first asked."""

    answers: tuple[tuple[str, Any, Any], ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256(repr(self.answers).encode("utf-8", "surrogateescape")).hexdigest()

    def hold_for(self, tree: FileTree) -> bool:
        """Whether `tree` gives every answer this evaluation got (then it evaluates the same)."""
        return all(_answer(tree, kind, question) == answer for kind, question, answer in self.answers)


def _answer(tree: FileTree, kind: str, question: Any) -> Any:
    if kind == _BLOB:
        return tree.blob_id(question)
    if kind == _EXISTS:
        return tree.exists(question)
    if kind == _IS_DIR:
        return tree.is_dir(question)
    if kind == _GLOB:
        return glob_paths(tree, *question)
    if kind == _UNDER:
        return _listing_digest(tree.paths_under(question))
    raise ValueError(f"unknown kind of tree question {kind!r}")


class TreeReads:
    """The tree an evaluation reads, remembering each answer it gives (`reads`)."""

    def __init__(self, tree: FileTree) -> None:
        self._tree = tree
        self._answers: dict[tuple[str, Any], Any] = {}

    def reads(self) -> Reads:
        return Reads(tuple((kind, question, answer) for (kind, question), answer in self._answers.items()))

    def _note(self, kind: str, question: Any, answer: Any) -> Any:
        self._answers.setdefault((kind, question), answer)
        return answer

    def read(self, path: str) -> bytes | None:
        self._note(_BLOB, path, self._tree.blob_id(path))
        return self._tree.read(path)

    def read_text(self, path: str) -> str | None:
        self._note(_BLOB, path, self._tree.blob_id(path))
        return self._tree.read_text(path)

    def blob_id(self, path: str) -> str | None:
        return self._note(_BLOB, path, self._tree.blob_id(path))

    def exists(self, path: str) -> bool:
        return self._note(_EXISTS, path, self._tree.exists(path))

    def is_dir(self, path: str) -> bool:
        return self._note(_IS_DIR, path, self._tree.is_dir(path))

    def glob(self, prefix: str, regex: str) -> tuple[str, ...]:
        """The paths below `prefix` (a directory with its `/`, or "") that `regex` matches whole."""
        return self._note(_GLOB, (prefix, regex), glob_paths(self._tree, prefix, regex))

    def paths_under(self, prefix: str) -> tuple[str, ...]:
        """Every path below `prefix`; the answer recorded is the listing's digest."""
        paths = self._tree.paths_under(prefix)
        self._note(_UNDER, prefix, _listing_digest(paths))
        return paths


def glob_paths(tree: FileTree, prefix: str, regex: str) -> tuple[str, ...]:
    """The tree's paths below `prefix` that `regex` matches in full."""
    compiled = _compiled(regex)
    return tuple(path for path in tree.paths_under(prefix) if compiled.match(path))


def literal_directory(directory: str) -> str:
    """The leading components of a glob's directory that hold no wildcard, with a trailing `/`
    ("" when the first one has one): every path the glob can match lies below it."""
    literal: list[str] = []
    for part in directory.split("/") if directory else ():
        if any(c in part for c in "*?["):
            break
        literal.append(part)
    return posixpath.join(*literal) + "/" if literal else ""


@lru_cache(maxsize=1024)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _listing_digest(paths: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(paths).encode("utf-8", "surrogateescape")).hexdigest()
