"""How a package guards its CUDA targets, and the guard fix written in that idiom.

In order: the package's guard dict splatted into its other CUDA targets (`**cuda_kwargs`);
where the repository keeps its CUDA targets fbcode-only and uses the constraint nowhere, the
fbcode-only form; otherwise both `compatible_with = [<constraint>]` and `platforms`, and in a
file that other cells evaluate too (a shared `targets.bzl`) only outside fbcode, as a dict
conditioned on the cell: fbcode and OSS build CUDA targets as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.buck import edits
from bot.buck.targets import BuckTarget
from bot.fixes import fix_between
from bot.model import Fix
from bot.snapshot import Snapshot
from checks.support.callsite import call_of

PLATFORM_DEFS = "@fbsource//tools/build_defs:platform_defs.bzl"
FBSOURCE_UTILS = "@fbsource//tools/build_defs:fbsource_utils.bzl"
_LOAD_LINE = re.compile(r"^load\((?:[^()]|\([^()]*\))*\)", re.M)
_PLATFORMS_VALUE = re.compile(r"^\s*platforms\s*=\s*(.+?),?\s*$", re.M)
_DEF = re.compile(r"^def\s+\w+\s*\(([^)]*)\)\s*:", re.M)


@dataclass(frozen=True, slots=True)
class Guard:
    """The guard one target gets: `form` is splat | fbcode_target | keywords, with what it writes."""

    advice: str
    form: str
    expression: str = ""  # the splatted expression (splat)
    constraint: str = ""  # the quoted constraint (keywords)
    platforms: str = ""  # the `platforms` value source (keywords; inside `expression` for a conditional splat)


def guard_for(
    snap: Snapshot, target: BuckTarget, cell: str, constraint: str, splat: str | None, fbcode_only: bool
) -> Guard:
    """The guard `target` gets, in the package's idiom."""
    text = snap.head.text(target.path) or ""
    if splat:
        return Guard(f"splat the package's guard dict (`**{splat}`) as its other CUDA targets do", "splat", splat)
    if fbcode_only:
        advice = (
            "define it fbcode-only, as this repository defines its CUDA targets: with "
            "`fbcode_target(_kind = ...)` in BUCK, or below an `if not is_fbcode(): return` in targets.bzl"
        )
        return Guard(advice, "fbcode_target")
    quote = edits.string_literal(text, constraint)
    platforms = _platforms_source(text)
    shared = _shared_by_cells(snap, target, cell)
    condition = (_fbcode_condition(text, target.line) or "is_fbcode()") if shared else None
    if condition is None:
        return Guard(
            f"add `compatible_with = [{quote}]` and `platforms = {platforms}`", "keywords", "", quote, platforms
        )
    expression = f'({{}} if {condition} else {{"compatible_with": [{quote}], "platforms": {platforms}}})'
    advice = f"guard it outside fbcode only (other cells evaluate this file too): splat `**{expression}`"
    return Guard(advice, "splat", expression, quote, platforms)


def guard_fix(snap: Snapshot, path: str, guards: list[tuple[BuckTarget, Guard]], advice: str) -> Fix | None:
    """One fix of `path` that guards every target listed (their calls are edited bottom-up so
    that line numbers hold, and `CXX` is loaded once where a guard names it)."""
    text = snap.head.text(path)
    if text is None:
        return None
    fixed = text
    for target, guard in sorted(guards, key=lambda pair: -pair[0].line):
        call = call_of(fixed, target)
        if call is None or call.keyword("name") is None:
            return None  # not the rule's own call: nowhere to put the guard
        if guard.form == "splat":
            fixed = edits.insert_splat(fixed, call, guard.expression)
        elif guard.form == "fbcode_target":
            if target.path.endswith(".bzl") or "fbcode_target" not in fixed:
                return None
            wrapped = edits.insert_keyword(fixed, call, "_kind", call.callee, first=True)
            fixed = edits.replace_callee(wrapped, call, "fbcode_target")
        else:
            fixed = edits.insert_keyword(fixed, call, "compatible_with", f"[{guard.constraint}]", after="name")
            moved = call_of(fixed, target)
            if moved is None:
                return None
            fixed = edits.insert_keyword(fixed, moved, "platforms", guard.platforms, after="compatible_with")
    if any("CXX" in guard.platforms for _target, guard in guards) and not _loaded(fixed, "CXX"):
        fixed = _add_load(fixed, f'load("{PLATFORM_DEFS}", "CXX")')
    if any("is_fbcode()" in guard.expression for _target, guard in guards) and not _loaded(fixed, "is_fbcode"):
        fixed = _add_load(fixed, f'load("{FBSOURCE_UTILS}", "is_fbcode")')
    return fix_between(path, text, fixed, advice)


def _shared_by_cells(snap: Snapshot, target: BuckTarget, cell: str) -> bool:
    """Whether another cell defines the same target from the same file (a shared targets.bzl)."""
    for other in ("fbcode", "oss"):
        if other == cell:
            continue
        twin = snap.head.cell(other).targets.get(target.label)
        if twin is not None and twin.path == target.path:
            return True
    return False


def _fbcode_condition(text: str, line: int) -> str | None:
    """A Starlark expression true in fbcode, as the file can write it: the enclosing function's
    `is_fbcode` parameter, else a loaded `is_fbcode()`; None when the file has neither (the fix
    then loads `is_fbcode`, which is true in fbcode and OSS, false in xplat)."""
    offset = sum(len(row) + 1 for row in text.split("\n")[: line - 1])
    enclosing = None
    for match in _DEF.finditer(text, 0, offset):
        enclosing = match
    if enclosing is not None and re.search(r"\bis_fbcode\b", enclosing.group(1)):
        return "is_fbcode"
    if _loaded(text, "is_fbcode"):
        return "is_fbcode()"
    return None


def _platforms_source(text: str) -> str:
    """`platforms` as this file already writes it for a C++ target, else as the seed PR does."""
    for match in _PLATFORMS_VALUE.finditer(text):
        value = match.group(1).strip()
        if "CXX" in value:
            return value
    return "[CXX]"


def _loaded(text: str, name: str) -> bool:
    """Whether a `load()` of the file brings `name` in."""
    return any(re.search(rf"""["']{name}["']""", match.group(0)) for match in _LOAD_LINE.finditer(text))


def _add_load(text: str, load: str) -> str:
    """`text` with a `load()` line added after its last one-line load (at the top without any)."""
    loads = list(_LOAD_LINE.finditer(text))
    if not loads:
        return load + "\n" + text
    last = loads[-1]
    return text[: last.end()] + "\n" + load + text[last.end() :]
