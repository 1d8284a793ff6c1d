"""`link_whole = True` without `supports_python_dlopen = True`.

A force-linked library exists to keep symbols nobody calls directly: registration constructors,
or `aoti_torch_*` shims that an AOTInductor library resolves from its host when it is loaded.
When such a library ends up in a Python extension, Buck's Python native linking (omnibus and
its successors) only keeps it whole if the target says it supports being dlopen'ed from
Python; otherwise the symbols can be dropped again, and the failure only shows when a model
loads. Every other force-linked AOTI/CUDA target sets both flags.

Reported when a Python extension (or a Python target's native dependency) of the cell links the
library, and also when every other force-linked library written in the same file (two or more)
sets the flag: that file's convention says the library will be loaded from Python, and both
reviewers of #24643 asked for the flag on `common_shims_slim` before any extension linked it. A
force-linked library that nothing Python loads and that breaks no such convention, such as a
microcontroller kernel registration library, is left alone, as are libraries a macro makes (one
rule call defining a kernel library per operator, or the codegen's generated libraries): their
flags are the macro's, not something a maintainer writes per target.

Example (bad): `cxx_library(name = "common_shims_slim", link_whole = True)` in a file whose
other force-linked libraries all set `supports_python_dlopen = True`.

Use instead: add `supports_python_dlopen = True` next to `link_whole = True`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from bot.buck import edits
from bot.buck.cells import CELLS
from bot.buck.syntax import Call
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, SMOKE_VERIFIED, Check, Example
from bot.facts import change_scope, graph_indexes
from bot.fixes import fix_between
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import call_of

# Two or more other force-linked libraries in the file, all with the flag, make a convention; one
# other library's choice does not.
_MIN_PEERS = 2
_NAMED_PEERS = 4


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for cell in CELLS:
        graph = snap.head.cell(cell)
        loadable = graph_indexes.python_loaded(snap.head, cell)
        # What the change can affect: its targets, their files' other targets, and the targets a
        # Python loader newly links (or no longer does), wherever they are written.
        moved = graph_indexes.python_loaded_moved(snap, cell)
        scope = change_scope.changed_targets(snap, cell).widened(moved, graph)
        names_at = _names_at_call_sites(graph)
        written: dict[str, tuple[BuckTarget, Call]] = {}  # force-linked by the call in their own file
        for label, target in sorted(graph.targets.items()):
            if target.attr("link_whole") is not True or "library" not in target.kind or not scope.holds(target):
                continue
            call = call_of(snap.head.text(target.path) or "", target)
            if call is None or call.keyword("link_whole") is None or len(names_at[(target.path, target.line)]) > 1:
                continue  # made by a macro (a kernel library per operator, the codegen's libraries)
            written[label] = (target, call)
        by_file: dict[str, list[BuckTarget]] = {}
        for target, _call in written.values():
            if target.primary_label == target.label:
                by_file.setdefault(target.path, []).append(target)
        for label, (target, call) in written.items():
            if target.attr("supports_python_dlopen") is True:
                continue
            peers = [p for p in by_file.get(target.path, ()) if p.primary_label != target.primary_label]
            consistent = len(peers) >= _MIN_PEERS and all(p.attr("supports_python_dlopen") is True for p in peers)
            if label not in loadable and not consistent:
                continue
            yield _hit(snap, cell, target, call, peers if label not in loadable else ())


def _names_at_call_sites(graph) -> dict[tuple[str, int], set[str]]:
    """(file, line) of each rule call -> the names it defined, a wrapper's `_static` twin and an
    ATen-mode loop's `_aten` variant folded into their target's name."""
    names: dict[tuple[str, int], set[str]] = defaultdict(set)
    for target in graph.targets.values():
        names[(target.path, target.line)].add(target.primary_label.removesuffix("_aten"))
    return names


def _hit(snap: Snapshot, cell: str, target: BuckTarget, call: Call, peers) -> Hit:
    label = target.label
    text = snap.head.text(target.path) or ""
    written = call.keyword("link_whole")
    # Set next to the flag it goes with, in the call that sets it.
    fixed = edits.insert_keyword(text, call, "supports_python_dlopen", "True", after="link_whole")
    fix = fix_between(target.path, text, fixed, "let Python extensions keep it whole")
    evidence = [Evidence(target.path, target.line, f"`{label}` is defined here")]
    if peers:
        reason = (
            f"every other force-linked library in `{target.path}` ({len(peers)}: "
            + ", ".join(f"`{p.name}`" for p in peers[:_NAMED_PEERS])
            + (", ..." if len(peers) > _NAMED_PEERS else "")
            + ") sets it, so a Python extension that links this one later keeps only those whole"
        )
        evidence += [
            Evidence(p.path, p.line, f"`{p.label}` sets `supports_python_dlopen = True`") for p in peers[:_NAMED_PEERS]
        ]
    else:
        reason = (
            "in a Python extension its unreferenced symbols can be dropped, and an AOTInductor library "
            "then fails to load with `undefined symbol`"
        )
    return Hit(
        path=target.path,
        line=written.name_span.line if written is not None else target.line,  # run() passes calls that set it
        message=(
            f"`{label}` is force-linked (`link_whole = True`) but does not set "
            f"`supports_python_dlopen = True`; {reason}."
        ),
        key=target.primary_label,
        target=label,
        cell=cell,
        offending_text="link_whole",
        evidence=tuple(evidence),
        fix=fix,
    )


def _aoti_library(name: str, flags: str) -> str:
    return f'cxx_library(\n    name = "{name}",\n    srcs = ["{name}.cpp"],\n{flags})\n'


_BOTH_FLAGS = "    link_whole = True,\n    supports_python_dlopen = True,\n"
# backends/aoti as #24643 found it: every force-linked library sets both flags.
_AOTI_FILE = "".join(
    _aoti_library(name, _BOTH_FLAGS) for name in ("common_shims", "delegate_handle", "common_shims_slim")
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
        # Nothing loads it from Python yet, but every other force-linked library of the file sets the flag.
        Example(
            head={
                "backends/aoti/BUCK": _AOTI_FILE.replace(
                    _aoti_library("common_shims_slim", _BOTH_FLAGS),
                    _aoti_library(
                        "common_shims_slim", "    link_whole = True,  # expect: link-whole-without-python-dlopen\n"
                    ),
                ),
            },
            fixed={
                "backends/aoti/BUCK": _AOTI_FILE.replace(
                    _aoti_library("common_shims_slim", _BOTH_FLAGS),
                    _aoti_library(
                        "common_shims_slim",
                        "    link_whole = True,  # expect: link-whole-without-python-dlopen\n    supports_python_dlopen = True,\n",
                    ),
                ),
            },
        ),
    ),
    good=(
        Example(head={"backends/aoti/BUCK": _AOTI_FILE}),
        # One other force-linked library with the flag is no convention.
        Example(
            head={
                "backends/aoti/BUCK": (
                    'cxx_library(name = "delegate_handle", link_whole = True, supports_python_dlopen = True)\n'
                    'cxx_library(name = "common_shims_slim", srcs = ["common_shims_slim.cpp"], link_whole = True)\n'
                ),
            }
        ),
        # Kernel libraries a macro makes, one per operator, linked by the Python bindings.
        Example(
            head={
                "kernels/portable/cpu/BUCK": (
                    "def define_op_target(name):\n"
                    '    native.cxx_library(name = name, srcs = [name + ".cpp"], link_whole = True)\n'
                    "\n"
                    'define_op_target("op_add")\n'
                    'define_op_target("op_mul")\n'
                    'native.cxx_library(name = "registry", link_whole = True, supports_python_dlopen = True)\n'
                    'native.cxx_library(name = "shims", link_whole = True, supports_python_dlopen = True)\n'
                ),
                "extension/pybindings/BUCK": (
                    'cxx_python_extension(name = "_portable_lib", deps = ["//kernels/portable/cpu:op_add"])\n'
                ),
            }
        ),
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
