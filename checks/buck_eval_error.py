"""A Buck package fails to evaluate at head.

When a BUCK file, or a macro it loads, fails at evaluation time (a missing load, a wrong type,
a `fail()`), every target of the package disappears from that cell, including targets the
pull request never touched; dependents then fail with "unknown target". pr-check evaluates
every package in all three cells (`fbcode`, `xplat`, `oss`) and reports packages that fail at
head and did not at base. In the open-source build, a package no CI command loads is reported
at minor, naming the `buck2 uquery` command that fails, instead of being dropped.

Example (bad): `load(":missing.bzl", "helper")`.

Use instead: fix the evaluation error; `buck2 uquery //pkg/...` reproduces it.
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
        frozenset({EvalErrorKind.OTHER, EvalErrorKind.LOAD}),
        lambda error, graph: (
            f"`//{error.package}` fails to evaluate in the `{error.cell}` cell: {error.message}. "
            "Every target of the package is missing from that cell."
        ),
    )


CHECK = Check(
    id="buck-eval-error",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="Buck package fails to evaluate",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "pkg/BUCK": 'load(":defs.bzl", "define")\ndefine()\n',
                "pkg/defs.bzl": 'def define():\n    native.cxx_library(name = 1 + "a")  # expect: buck-eval-error\n',
            }
        ),
    ),
    good=(
        Example(
            head={
                "pkg/BUCK": 'load(":defs.bzl", "define")\ndefine()\n',
                "pkg/defs.bzl": 'def define():\n    native.cxx_library(name = "a")\n',
            }
        ),
    ),
)
