"""Which translation units a review compiles: those the change touches, then those including a
header it changes (through other headers, nearest first), then those that included a header it
deletes, then the sources of targets whose deps, flags or headers it edits; capped and chosen
deterministically (the rest is named as left out).

The include scan is the one every header rule reads (`BuildModel.includes`, kept per blob), so
a warm review derives the reverse index from the store without reading a file."""

from __future__ import annotations

import difflib
import posixpath
import re

from bot.buck.cells import is_build_file
from bot.facts import revision
from bot.facts.compile_units import HEADER_SUFFIXES, TU_SUFFIXES
from bot.facts.revision import tree_memo

MAX_UNITS = 12  # TUs per review: the rest is named as left out
CUDA_UNITS = (".cu",)  # found as includers (a prediction about them is unknown), never compiled here
MAX_DEPTH = 3  # headers including the changed header, and so on: further ones are not looked for


def chosen_units(snap) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(TUs to compile, TUs left out by the cap), each in the order they were ranked."""
    head = snap.head
    changed = sorted({change.path for change in snap.changes.files if change.path and head.tree.exists(change.path)})
    direct = [path for path in changed if path.endswith(TU_SUFFIXES)]
    headers = [path for path in changed if path.endswith(HEADER_SUFFIXES)]
    # A header deleted or renamed: the sources that included it at base and remain.
    gone = sorted(
        {
            path
            for change in snap.changes.files
            for path in (change.old_path, change.path)
            if path and path.endswith(HEADER_SUFFIXES) and not head.tree.exists(path) and snap.base.tree.exists(path)
        }
    )
    ranked = list(direct)
    if headers:
        ranked += [p for p in includers_of(head, headers) if p not in ranked and p.endswith(TU_SUFFIXES)]
    if gone:
        ranked += [
            p
            for p in includers_of(snap.base, gone)
            if p not in ranked and head.tree.exists(p) and p.endswith(TU_SUFFIXES)
        ]
    ranked += [path for path in _sources_of_changed_targets(snap) if path not in ranked]
    return tuple(ranked[:MAX_UNITS]), tuple(ranked[MAX_UNITS:])


_VISIBILITY_ATTRIBUTES = ("deps", "exported_deps", "preprocessor_flags", "exported_preprocessor_flags", "headers")


def _sources_of_changed_targets(snap) -> list[str]:
    """Sources of the C++ targets whose deps, flags or headers the change edits, in any cell:
    what they see is what changed (a dep dropped, a header made private)."""
    if not any(is_build_file(path) or path.endswith(".bzl") for path in snap.changes.paths):
        return []
    from bot.facts import xref
    from bot.facts.header_deps import CXX_KINDS

    found: set[str] = set()
    for cell in ("fbcode", "xplat", "oss"):
        head_targets, base_targets = snap.head.cell(cell).targets, snap.base.cell(cell).targets
        for label, target in head_targets.items():
            before = base_targets.get(label)
            if before is None or not CXX_KINDS.search(target.kind):
                continue
            if any(target.attrs.get(a) != before.attrs.get(a) for a in _VISIBILITY_ATTRIBUTES):
                found.update(p for p in xref.source_paths(target) if p.endswith(TU_SUFFIXES))
    return sorted(p for p in found if snap.head.tree.exists(p))


def includers_of(model, headers: list[str]) -> list[str]:
    """TUs including any of `headers`, directly or through other headers, nearest first."""
    reverse = tree_memo(model, ("compile-reverse-includes",), lambda: _reverse_index(model))
    found: list[str] = []
    frontier, seen = list(headers), set(headers)
    for _depth in range(MAX_DEPTH):
        following: list[str] = []
        for header in frontier:
            for path in reverse.get(header, ()):
                if path in seen:
                    continue
                seen.add(path)
                if path.endswith(TU_SUFFIXES + CUDA_UNITS):
                    found.append(path)
                else:
                    following.append(path)
        frontier = sorted(following)
    return found


def _reverse_index(model) -> dict[str, tuple[str, ...]]:
    """repository header path -> files including it (by `executorch/<path>`, by a path relative
    to the includer, or by a name ending the header's path)."""
    files = [p for p in model.tree.paths() if p.endswith(TU_SUFFIXES + CUDA_UNITS + HEADER_SUFFIXES)]
    includes = revision.includes(model, files)
    headers = {p for p in files if p.endswith(HEADER_SUFFIXES)}
    by_tail: dict[str, list[str]] = {}
    for header in headers:
        parts = header.split("/")
        for start in range(max(0, len(parts) - 3), len(parts)):
            by_tail.setdefault("/".join(parts[start:]), []).append(header)
    reverse: dict[str, set[str]] = {}
    for path, found in includes.items():
        for name, _line in found:
            targets: set[str] = set()
            plain = name[len("executorch/") :] if name.startswith("executorch/") else None
            if plain is not None and plain in headers:
                targets.add(plain)
            relative = posixpath.normpath(posixpath.join(posixpath.dirname(path), name))
            if relative in headers:
                targets.add(relative)
            if not targets:
                targets.update(
                    h
                    for h in by_tail.get(name, ())
                    if name.count("/") >= 1 or posixpath.dirname(h) == posixpath.dirname(path)
                )
            for header in targets:
                reverse.setdefault(header, set()).add(path)
    return {header: tuple(sorted(paths)) for header, paths in reverse.items()}


_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif|define|undef)\b")


def link_sources(snap, chosen: tuple[str, ...]) -> tuple[str, ...]:
    """The chosen TUs whose targets are worth linking: those the change edits, and those including
    a changed header whose edit touches a preprocessor conditional or definition (which can add
    or remove a definition: an implementation macro renamed). A header that only gains or loses
    declarations changes no link a compile does not already show."""
    head, base = snap.head, snap.base
    direct = {change.path for change in snap.changes.files if change.path}
    gated = [
        path
        for path in sorted(direct)
        if path.endswith(HEADER_SUFFIXES) and head.tree.exists(path) and _edits_directives(base, head, path)
    ]
    reached = set(includers_of(head, gated)) if gated else set()
    return tuple(path for path in chosen if path in direct or path in reached)


def _edits_directives(base, head, path: str) -> bool:
    before = (base.tree.read_text(path) or "").splitlines()
    after = (head.tree.read_text(path) or "").splitlines()
    changed = (
        line[1:]
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )
    return any(_DIRECTIVE.match(line) for line in changed)
