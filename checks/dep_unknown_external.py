"""An `external_deps` entry that the open-source Buck build cannot map fails the whole package.

In OSS Buck, `shim_et`'s wrapper resolves each `external_deps` name by a bare lookup in its
`_EXTERNAL_DEPS` table. A name the table lacks, or a tuple such as
`("cuda", None, "cuda-lazy")`, is a key error at evaluation time: every target of the package
disappears from the OSS build, not only the one that asked for the dep. Internal cells map
these names through Meta's third-party table, so no internal CI notices.

A package that no command of the repository's CI loads in OSS (`.ci/`, `.github/`) breaks no CI
job, but `buck2 uquery //pkg/...` fails and so does any OSS build of a target depending on it:
that is reported at minor, with the command, rather than dropped.

Example (bad): a pybindings macro called with `use_cuda = True` that appends
`("cuda", None, "cuda-lazy")` to `external_deps` in a package OSS evaluates.

Use instead: add the name to `_EXTERNAL_DEPS`, or skip the target when `runtime.is_oss`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.buck.cells import OPEN_SOURCE_CELLS
from bot.buck.targets import EvalErrorKind
from bot.check import BUCK_FILES, Check, Example
from bot.model import Hit, Severity
from bot.snapshot import Snapshot
from checks.support.eval_failures import failure_hits
from checks.support.oss_shim_example import oss_files

_KEY = re.compile(r"Key `(.+?)` was not found")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    def describe(error, graph) -> str:
        match = _KEY.search(error.message)
        name = match.group(1) if match else error.message
        return (
            f"In the `oss` cell the external dep `{name}` is not in the OSS `_EXTERNAL_DEPS` table, so "
            f"evaluating `//{error.package}` fails and every target of the package is missing from the "
            "open-source build. Map the name in `shim_et/xplat/executorch/build/env_interface.bzl`, or "
            "define this target only when `not runtime.is_oss`."
        )

    for hit in failure_hits(snap, frozenset({EvalErrorKind.EXTERNAL_DEP}), describe):
        if hit.cell in OPEN_SOURCE_CELLS:  # internal cells map external deps themselves
            yield hit


_TARGETS = (
    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
    "\n"
    "def define_common_targets(use_cuda = False):\n"
    '    deps = [("cuda", None, "cuda-lazy")] if use_cuda else []\n'
    "    runtime.cxx_library(\n"
    '        name = "bindings",\n'
    '        srcs = ["bindings.cpp"],\n'
    "        external_deps = deps,\n"
    "    )\n"
)

CHECK = Check(
    id="dep-unknown-external",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="External dep the OSS build cannot map",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                **oss_files(),
                "extension/pybindings/BUCK": (
                    'load(":targets.bzl", "define_common_targets")\ndefine_common_targets(use_cuda = True)\n'
                ),
                "extension/pybindings/targets.bzl": _TARGETS.replace(
                    "runtime.cxx_library(\n", "runtime.cxx_library(  # expect: dep-unknown-external\n"
                ),
            }
        ),
    ),
    good=(
        Example(
            head={
                **oss_files(),
                "extension/pybindings/BUCK": 'load(":targets.bzl", "define_common_targets")\ndefine_common_targets()\n',
                "extension/pybindings/targets.bzl": _TARGETS,
            }
        ),
    ),
)
