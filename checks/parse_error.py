"""A BUCK or .bzl file does not parse.

A syntax error fails every build that loads the file, in every cell, before any rule is seen.
No CI job of a pull request that only touches fbcode targets notices it for xplat or OSS.

Example (bad): an unclosed parenthesis in `cxx_library(name = "a",`.

Use instead: valid Starlark; `buck2 uquery //pkg/...` shows the same error locally.
"""

from __future__ import annotations

from typing import Iterator

from checks.support.eval_failures import failure_hits
from bot.check import BUCK_FILES, Check, Example
from bot.model import Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from failure_hits(
        snap,
        frozenset({"parse"}),
        lambda error, graph: f"`{error.path}` does not parse, so `//{error.package}` fails to load: {error.message}",
    )


CHECK = Check(
    id="parse-error",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="Buck file does not parse",
    doc=__doc__,
    run=run,
    bad=(Example(head={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp"]]  # expect: parse-error\n'}),),
    good=(Example(head={"pkg/BUCK": 'cxx_library(name = "a", srcs = ["a.cpp"])\n'}),),
)
