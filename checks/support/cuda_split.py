"""The fix for CUDA code in a target that CPU-only targets depend on: the split, never the guard.

A guard (`compatible_with` the CUDA constraint) on such a target takes every dependent that built
on a CPU-only platform off it. What keeps them building is keeping the CUDA part out of the
CPU-only configurations: a CUDA source listed under `select()` on the constraint (mechanical when
`srcs` is a plain list in the target's own call), or the CUDA code moved into a CUDA-only target
that the CUDA dependents depend on (a design decision: advice only).
"""

from __future__ import annotations

import posixpath

from bot.buck import edits
from bot.buck.evaluation import BuckTarget
from bot.facts import xref
from bot.fixes import fix_between
from bot.model import Fix
from bot.snapshot import Snapshot
from checks.support.callsite import call_of


def split_advice(
    snap: Snapshot, target: BuckTarget, reason: xref.CudaReason, constraint: str, kept: int
) -> tuple[str, Fix | None]:
    """(advice, fix or None) that keep the CUDA part of `target` out of its CPU-only configurations."""
    moved = "its CUDA code into a CUDA-only target (guarded) that the CUDA dependents depend on"
    if reason.kind == "source":
        relative = reason.detail[len(target.package) + 1 :] if target.package else reason.detail
        selection = f'select({{"{constraint}": ["{relative}"], "DEFAULT": []}})'
        advice = f"list `{relative}` in `srcs` under `{selection}`, or move {moved}"
        fix = _source_under_select(snap, target, relative, constraint)
        if fix is not None:
            description = (
                f"compile `{relative}` only where CUDA is: its {kept} CPU-only dependent"
                f"{'s keep' if kept != 1 else ' keeps'} building"
            )
            fix = Fix(
                fix.path, fix.line, fix.end_line, fix.replacement, description, fix.original, fix.above, fix.below
            )
        return advice, fix
    what = {"external_dep": f"the external dep `{reason.detail}`", "nvcc_flags": "`nvcc_flags`"}.get(
        reason.kind, "the CUDA dependency"
    )
    return f"put {what} under `select()` on `{constraint}`, or move {moved}", None


def _source_under_select(snap: Snapshot, target: BuckTarget, relative: str, constraint: str) -> Fix | None:
    """`relative` taken out of the plain `srcs = [...]` of the target's call and added back as
    `+ select({constraint: [relative], "DEFAULT": []})`; None where `srcs` is not such a list."""
    text = snap.head.text(target.path)
    call = call_of(text or "", target)
    keyword = call.keyword("srcs") if call is not None else None
    literal = keyword.value_list if keyword is not None else None
    if text is None or keyword is None or literal is None:
        return None
    if (keyword.value_span.start, keyword.value_span.end) != (literal.span.start, literal.span.end):
        return None  # `srcs = [...] + something`: not a plain list to take an element out of
    index = next(
        (i for i, e in enumerate(literal.elements) if e.string and posixpath.normpath(e.string) == relative), None
    )
    if index is None:
        return None
    quote = literal.elements[index].quote or '"'
    removed = edits.remove_list_element(text, literal, index)
    moved = call_of(removed, target)
    keyword = moved.keyword("srcs") if moved is not None else None
    if keyword is None:
        return None
    value = removed[keyword.value_span.start : keyword.value_span.end]
    written = f"{value} + select({{{quote}{constraint}{quote}: [{quote}{relative}{quote}], {quote}DEFAULT{quote}: []}})"
    fixed = edits.replace_value(removed, keyword, written)
    return fix_between(target.path, text, fixed, "")
