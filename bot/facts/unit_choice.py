"""Which translation units a review compiles: those the change touches, then those including a
header it changes (through other headers, nearest first), capped and chosen deterministically.

The include scan is the one every header rule reads (`BuildModel.includes`, kept per blob), so
a warm review derives the reverse index from the store without reading a file."""

from __future__ import annotations

import posixpath

from bot.facts.compile_units import HEADER_SUFFIXES, TU_SUFFIXES

MAX_UNITS = 12  # TUs per review: the rest is named as left out
MAX_DEPTH = 3  # headers including the changed header, and so on: further ones are not looked for


def chosen_units(snap) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(TUs to compile, TUs left out by the cap), each in the order they were ranked."""
    head = snap.head
    changed = sorted({change.path for change in snap.changes.files if change.path and head.tree.exists(change.path)})
    direct = [path for path in changed if path.endswith(TU_SUFFIXES)]
    headers = [path for path in changed if path.endswith(HEADER_SUFFIXES)]
    ranked = list(direct)
    if headers:
        ranked += [path for path in _includers(head, headers) if path not in ranked]
    return tuple(ranked[:MAX_UNITS]), tuple(ranked[MAX_UNITS:])


def _includers(model, headers: list[str]) -> list[str]:
    """TUs including any of `headers`, directly or through other headers, nearest first."""
    reverse = model.memo(("compile-reverse-includes",), lambda: _reverse_index(model))
    found: list[str] = []
    frontier, seen = list(headers), set(headers)
    for _depth in range(MAX_DEPTH):
        following: list[str] = []
        for header in frontier:
            for path in reverse.get(header, ()):
                if path in seen:
                    continue
                seen.add(path)
                if path.endswith(TU_SUFFIXES):
                    found.append(path)
                else:
                    following.append(path)
        frontier = sorted(following)
    return found


def _reverse_index(model) -> dict[str, tuple[str, ...]]:
    """repository header path -> files including it (by `executorch/<path>`, by a path relative
    to the includer, or by a name ending the header's path)."""
    files = [p for p in model.tree.paths() if p.endswith(TU_SUFFIXES + HEADER_SUFFIXES)]
    includes = model.includes(files)
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
