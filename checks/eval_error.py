"""Evaluating a Buck package ran past a limit: time, memory or call depth.

pr-check evaluates BUCK and .bzl files with a real Starlark interpreter under bounds, because
they come from pull requests and must never hang or exhaust the reviewer. Starlark that
recurses without end or allocates without bound would also stall buck2 itself: every build
that loads the package, in every cell, pays for it.

Example (bad): `def f(n): return f(n + 1)` called from a BUCK file.

Use instead: bounded loops and recursion (Starlark forbids recursion in buck2 anyway).
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.targets import EvalErrorKind
from bot.check import BUCK_FILES, Check, Example
from bot.model import Hit, Severity
from bot.snapshot import Snapshot
from checks.support.eval_failures import failure_hits


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from failure_hits(
        snap,
        frozenset({EvalErrorKind.LIMIT}),
        lambda error, graph: f"Evaluating `//{error.package}` in the `{error.cell}` cell stopped: {error.message}.",
    )


CHECK = Check(
    id="eval-error",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="Buck package evaluation ran past a limit",
    doc=__doc__,
    run=run,
    bad=(Example(head={"pkg/BUCK": ("def grow(n):\n    return grow(n + 1)  # expect: eval-error\ngrow(0)\n")}),),
    good=(Example(head={"pkg/BUCK": "def grow(n):\n    return n + 1\ngrow(0)\n"}),),
)
