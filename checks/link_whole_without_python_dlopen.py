"""`link_whole = True` without `supports_python_dlopen = True`.

A force-linked library exists to keep symbols nobody calls directly: registration constructors,
or `aoti_torch_*` shims that an AOTInductor library resolves from its host when it is loaded.
When such a library ends up in a Python extension, Buck's Python native linking (omnibus and
its successors) only keeps it whole if the target says it supports being dlopen'ed from
Python; otherwise the symbols can be dropped again, and the failure only shows when a model
loads. Every other force-linked AOTI/CUDA target sets both flags.

Only libraries a Python extension can load are concerned: a force-linked library that no
`cxx_python_extension` (or Python target's native dependency) of the cell reaches, such as a
microcontroller kernel registration library, is never dlopen'ed from Python.

Example (bad): `cxx_library(name = "common_shims_slim", link_whole = True)`.

Use instead: add `supports_python_dlopen = True` next to `link_whole = True`.
"""

from __future__ import annotations

from typing import Iterator

from bot.buck.cells import CELLS
from bot.facts.linkage import python_loadable
from bot.buck import edits
from bot.fixes import fix_between
from checks.support.callsite import call_of
from bot.check import BUCK_FILES, Check, Example, SMOKE_VERIFIED
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for cell in CELLS:
        graph = snap.head.cell(cell)
        loadable = snap.head.graph_memo(cell, ("python-loadable",), python_loadable)
        for label, target in sorted(graph.targets.items()):
            if target.attr("link_whole") is not True or target.attr("supports_python_dlopen") is True:
                continue
            if "library" not in target.kind or label not in loadable:
                continue
            text = snap.head.text(target.path) or ""
            call = call_of(text, target)
            written = call.keyword("link_whole") if call is not None else None
            line = written.name_span.line if written is not None else target.line
            fix = None
            if written is not None:  # set next to the flag it goes with, in the call that sets it
                fixed = edits.insert_keyword(text, call, "supports_python_dlopen", "True", after="link_whole")
                fix = fix_between(target.path, text, fixed, "let Python extensions keep it whole")
            yield Hit(
                path=target.path,
                line=line,
                message=(
                    f"`{label}` is force-linked (`link_whole = True`) but does not set "
                    "`supports_python_dlopen = True`; in a Python extension its unreferenced symbols can be "
                    "dropped, and an AOTInductor library then fails to load with `undefined symbol`."
                ),
                key=target.primary_label,
                target=label,
                cell=cell,
                offending_text="link_whole",
                evidence=(Evidence(target.path, target.line, f"`{label}` is defined here"),),
                fix=fix,
            )


CHECK = Check(
    id="link-whole-without-python-dlopen",
    tags=frozenset({SMOKE_VERIFIED}),
    fixable=True,
    inputs=BUCK_FILES,
    severity=Severity.MINOR,
    title="Force-linked library without supports_python_dlopen",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims_slim",\n'
                    '    srcs = ["common_shims_slim.cpp"],\n'
                    "    link_whole = True,  # expect: link-whole-without-python-dlopen\n"
                    ")\n"
                ),
                "extension/pybindings/BUCK": (
                    'cxx_python_extension(name = "_portable_lib", deps = ["//backends/aoti:common_shims_slim"])\n'
                ),
            },
            fixed={
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims_slim",\n'
                    '    srcs = ["common_shims_slim.cpp"],\n'
                    "    link_whole = True,  # expect: link-whole-without-python-dlopen\n"
                    "    supports_python_dlopen = True,\n"
                    ")\n"
                ),
            },
        ),
    ),
    good=(
        Example(
            head={
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims_slim",\n'
                    '    srcs = ["common_shims_slim.cpp"],\n'
                    "    link_whole = True,\n"
                    "    supports_python_dlopen = True,\n"
                    ")\n"
                    "cxx_library(\n"
                    '    name = "plain",\n'
                    '    srcs = ["plain.cpp"],\n'
                    ")\n"
                ),
                "extension/pybindings/BUCK": (
                    'cxx_python_extension(name = "_portable_lib", deps = ["//backends/aoti:common_shims_slim"])\n'
                ),
            }
        ),
        # A kernel registration library for a microcontroller: nothing Python loads it.
        Example(
            head={
                "backends/cortex_m/ops/BUCK": (
                    'cxx_library(name = "op_quantized_div", srcs = ["op_quantized_div.cpp"], link_whole = True)\n'
                ),
            }
        ),
    ),
)
