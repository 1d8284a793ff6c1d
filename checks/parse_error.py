"""A BUCK, TARGETS or .bzl file does not parse.

A syntax error fails every build that loads the file, in every cell, before any rule is seen.
No CI job of a pull request that only touches fbcode targets notices it for xplat or OSS.
Every error of the file is reported, each at its line and column: the interpreter stops at the
first, and a fix-one-push-again loop per error is slow.

Example (bad): an unclosed parenthesis in `cxx_library(name = "a",`.

Use instead: valid Starlark; `buck2 uquery //pkg/...` shows the same error locally.
"""

from __future__ import annotations

import posixpath
from typing import Iterator

from bot.buck.cells import CELLS
from bot.buck.packages import build_file_names, load_buckconfig
from bot.buck.syntax import syntax_of
from checks.support.eval_failures import failure_hits
from bot.check import BUCK_FILES, Check, Example
from bot.model import Hit, Severity
from bot.snapshot import Snapshot

def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from _syntax_hits(snap)
    # What the interpreter calls a parse failure where the file's syntax is fine (a package
    # newly loading a file that does not parse): reported as evaluation saw it, never lost.
    for hit in failure_hits(snap, frozenset({"parse"}), _describe_failure):
        if not syntax_of(snap.head.text(hit.path) or "").errors:
            yield hit


def _describe_failure(error, graph) -> str:
    return f"`{error.path}` does not parse, so `//{error.package}` fails to load: {error.message}"


def _syntax_hits(snap: Snapshot) -> Iterator[Hit]:
    config = load_buckconfig(snap.head.tree)
    build_files = frozenset(name for cell in CELLS for name in build_file_names(config, cell))
    for change in sorted(snap.changes.files, key=lambda c: c.path):
        path = change.path
        if change.status == "deleted" or not _is_starlark(path, build_files):
            continue
        text = snap.head.text(path)
        if text is None:
            continue
        errors = syntax_of(text).errors
        if not errors:
            continue
        before = snap.base.text(change.old_path or path) if snap.base is not snap.head else None
        if before is not None and syntax_of(before).errors:
            continue  # broken before the change: not this change's doing
        lines = text.splitlines()
        seen: dict[str, int] = {}
        for error in errors:
            seen[error.message] = seen.get(error.message, 0) + 1
            yield Hit(
                path=path,
                line=error.line,
                message=f"`{path}` does not parse ({_consequence(path)}): line {error.line}, column {error.column}: {error.message}",
                # Several errors of one file are several findings; the key names each without its line.
                key=f"{path}|{error.message}|{seen[error.message]}",
                offending_text=lines[error.line - 1].strip() if 0 < error.line <= len(lines) else "",
            )


def _is_starlark(path: str, build_files: frozenset[str]) -> bool:
    name = posixpath.basename(path)
    return name in build_files or name.endswith(".bzl")


def _consequence(path: str) -> str:
    if path.endswith(".bzl"):
        return "every package that loads it fails to load"
    package = posixpath.dirname(path)
    return f"`//{package}` fails to load"


CHECK = Check(
    id="parse-error",
    inputs=tuple(kind for kind in BUCK_FILES if kind != ".buckconfig"),
    severity=Severity.BLOCKER,
    title="Buck file does not parse",
    doc=__doc__,
    run=run,
    bad=(
        Example(head={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp"]]  # expect: parse-error\n'}),
        Example(
            head={
                "pkg/BUCK": (
                    "cxx_library(\n"
                    '    name = "a",\n'
                    '    srcs = ["a.cpp"]],  # expect: parse-error\n'
                    ")\n"
                    'cxx_library(name = "b", deps = [":a" ":c"])  # expect: parse-error\n'
                    'cxx_library(name = "c", srcs = )  # expect: parse-error\n'
                    'cxx_library(name = "d")\n'
                ),
            }
        ),
        Example(
            base={"pkg/defs.bzl": "def rules():\n    pass\n"},
            head={"pkg/defs.bzl": "def rules():\n    while True:  # expect: parse-error\n        pass\n"},
        ),
    ),
    good=(
        Example(head={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp"])\n'}),
        # Already broken before the change: not reported again.
        Example(
            base={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp"]]\n'},
            head={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp", "b.cpp"]]\n'},
        ),
    ),
)
