"""A C, C++ or CUDA file the review could not read fully: over 4 MiB, or scopes nested too deep.

pr-check reads the declarations and `#if` gates of the C, C++ and CUDA files a pull request
touches. A file over 4 MiB is not read at all (a generated blob costs gigabytes to parse), and
what is declared inside namespaces, classes, `extern "C"` blocks or templates nested more than
64 deep is not read (a pull request can nest them thousands deep). Whatever is there is missing
from the review: gate, duplicate-symbol and header findings about it cannot be made, so a review
that says nothing would be a false all-clear.

Example (bad): a header with 65 nested `namespace detail {`.

Use instead: shallower nesting (`namespace a::b::c {` is one level); generated tables kept out of
headers, or loaded at run time.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import CPP_FILES, Check, Example
from bot.cpp.declarations import is_source_path
from bot.model import Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for change in snap.changes.files:
        if change.status == "deleted" or not is_source_path(change.path):
            continue
        facts = snap.head.source_facts(change.path)
        for limit in facts.limits if facts is not None else ():
            stable = "".join(ch for ch in limit.message if not ch.isdigit())  # sizes and depths vary
            yield Hit(
                path=change.path,
                line=limit.line,
                message=(
                    f"`{change.path}` was not read fully: {limit.message}. What it declares there is missing from "
                    "this review, so findings about it (gates, duplicate symbols, headers) cannot be made."
                ),
                key=stable,
                offending_text=stable,
            )


_DEEP = 65  # one past the scopes the C++ layer reads (bot/cpp/declarations.py MAX_SCOPE_DEPTH)


def _nested(depth: int, marked: bool) -> str:
    lines = ["namespace level {"] * depth
    if marked:
        lines[-1] += "  // expect: cpp-read-limit"
    return "\n".join(lines + ["int hidden(void);"] + ["}"] * depth) + "\n"


CHECK = Check(
    id="cpp-read-limit",
    inputs=CPP_FILES,
    severity=Severity.MAJOR,
    title="C/C++ file not read fully",
    doc=__doc__,
    run=run,
    bad=(Example(head={"include/deep.h": _nested(_DEEP, marked=True)}),),
    good=(Example(head={"include/deep.h": _nested(_DEEP - 1, marked=False)}),),
)
