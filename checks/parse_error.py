"""A BUCK, TARGETS or .bzl file does not parse.

A syntax error fails every build that loads the file, in every cell, before any rule is seen.
No CI job of a pull request that only touches fbcode targets notices it for xplat or OSS.
Every error of the file is reported, each at its line and column: the interpreter stops at the
first, and a fix-one-push-again loop per error is slow. Each later error is the one the
interpreter finds once the earlier one is repaired (a missing comma put in, or the broken
statement set aside), so a broken line never makes the valid lines after it look broken.

Example (bad): an unclosed parenthesis in `cxx_library(name = "a",`.

Use instead: valid Starlark; `buck2 uquery //pkg/...` shows the same error locally.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.packages import build_file_names, load_buckconfig
from bot.buck.syntax import syntax_of
from bot.buck.targets import EvalErrorKind
from bot.check import BUCK_FILES, Check, Example
from bot.model import Hit, ReviewMode, Severity
from bot.snapshot import Snapshot
from checks.support.eval_failures import failure_hits


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    reported: set[str] = set()
    for hit in _syntax_hits(snap):
        reported.add(hit.path)
        yield hit
    # What the interpreter calls a parse failure where the file's syntax is fine (a package
    # newly loading a file that does not parse): reported as evaluation saw it, never lost.
    # A package failing because it loads a file whose errors are reported above is the same
    # root error: the valid `load` line is not flagged again.
    loading_reported = (
        {
            (cell, result.build_file)
            for cell in CELLS
            for result in snap.head.cell(cell).packages.values()
            if result.error is not None and reported.intersection(result.loaded)
        }
        if reported
        else set()
    )
    for hit in failure_hits(snap, frozenset({EvalErrorKind.PARSE}), _describe_failure):
        if syntax_of(snap.head.text(hit.path) or "").errors or (hit.cell, hit.path) in loading_reported:
            continue
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
        before = snap.base.text(change.old_path or path) if snap.mode is not ReviewMode.BASELINE else None
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
        # Three missing commas in one call: each reported once, where it is; the valid lines after
        # each (and the next call) draw nothing.
        Example(
            head={
                "pkg/BUCK": (
                    "cxx_library(\n"
                    '    name = "a"\n'
                    '    srcs = ["a.cpp"],  # expect: parse-error\n'
                    "    deps = [\n"
                    '        ":b"\n'
                    '        ":c",  # expect: parse-error\n'
                    "    ]\n"
                    '    visibility = ["PUBLIC"],  # expect: parse-error\n'
                    ")\n"
                    'cxx_library(name = "d", srcs = ["d.cpp"])\n'
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
