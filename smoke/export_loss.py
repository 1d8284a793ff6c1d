"""Why libaoti_cuda_shims.so exports fewer aoti_torch_* symbols at head than at base: the build line.

Each lost symbol is traced, from the facts of both builds (backend_compare.backend_summary), to one of:
- its source is no longer compiled into the library (base compiled it, head's plan has no such step):
  the CMake line the diff removes that named it, else the line base added it at;
- a visibility option reaches its compile at head and did not at base: the CMake line that adds it;
- the archive defining it is no longer linked whole: the link line (the exports stage found it);
- it is no longer defined as a global (made `static`, renamed): the line that still writes it.
Symbols lost the same way are one finding, with the base and head export counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from smoke.blame import HUNK

VISIBILITY = re.compile(r"-fvisibility=hidden\b")


@dataclass(frozen=True, slots=True)
class LossCause:
    symbols: tuple[str, ...]
    message: str
    path: str | None
    line: int | None
    in_diff: bool


def removed_lines(diff_text: str) -> list[tuple[str, int, str]]:
    """(head path, the head line where it was, text) for each line the diff removes."""
    found = []
    old_path: str | None = None
    path: str | None = None
    number = 0
    for row in diff_text.splitlines():
        if row.startswith("--- "):
            source = row[4:].strip().split("\t")[0]
            old_path = None if source == "/dev/null" else source.removeprefix("a/")
            continue
        if row.startswith("+++ "):
            target = row[4:].strip().split("\t")[0]
            path = old_path if target == "/dev/null" else target.removeprefix("b/")
            continue
        match = HUNK.match(row)
        if match:
            number = int(match.group("new"))
            continue
        if path is None or row.startswith(("diff ", "index ")):
            continue
        if row.startswith("-"):
            found.append((path, max(number, 1), row[1:]))
        elif row.startswith(("+", " ")):
            number += 1
    return found


def trace_lost_exports(base: dict, head: dict, diff_text: str, still_written) -> list[LossCause]:
    """One cause per way symbols were lost. still_written(symbol) -> (path, line) or None."""
    lost = sorted(set(base["exported"]) - set(head["exported"]))
    if not lost:
        return []
    counts = f"{len(base['exported'])} exported at base, {len(head['exported'])} at head"
    base_definitions: dict[str, str] = base.get("definitions", {})
    head_sources: dict[str, dict] = head.get("shim_sources", {})
    base_sources: dict[str, dict] = base.get("shim_sources", {})
    groups: dict[tuple, list[str]] = {}
    for symbol in lost:
        source = base_definitions.get(symbol)
        if source and source in base_sources and source not in head_sources:
            groups.setdefault(("dropped", source), []).append(symbol)
            continue
        if source and source in head_sources:
            added = _visibility_added(base_sources.get(source, {}), head_sources[source])
            if added:
                groups.setdefault(("visibility", added[0], added[1][0], added[1][1]), []).append(symbol)
                continue
        not_whole = head.get("not_whole_at", [])
        if not_whole and symbol in head.get("not_whole_symbols", ()):
            groups.setdefault(("not-whole", not_whole[0]), []).append(symbol)
            continue
        groups.setdefault(("not-global",), []).append(symbol)
    removed = removed_lines(diff_text)
    causes = []
    for key, symbols in groups.items():
        shown = ", ".join(symbols[:4]) + (", ..." if len(symbols) > 4 else "")
        what = f"{len(symbols)} aoti_torch_* symbol(s) no longer exported by libaoti_cuda_shims.so ({counts}): {shown}"
        if key[0] == "dropped":
            source = key[1]
            origin = base_sources[source]["origin"]
            cut = _removal_naming(removed, source)
            if cut:
                message = f"{what}; {source}, which defined them, is no longer compiled into the library: {cut[0]}:{cut[1]} (this pull request removes `{cut[2].strip()}` there)"
                causes.append(LossCause(tuple(symbols), message, cut[0], cut[1], True))
            else:
                message = f"{what}; {source}, which defined them, is no longer compiled into the library (base added it at {origin[0]}:{origin[1]})"
                causes.append(LossCause(tuple(symbols), message, origin[0], origin[1], False))
        elif key[0] == "visibility":
            option, path, line = key[1], key[2], key[3]
            in_diff = _added_here(diff_text, path, line)
            message = f"{what}; `{option}` now reaches their compile, added at {path}:{line}" + (
                ", a line this pull request adds" if in_diff else ""
            )
            causes.append(LossCause(tuple(symbols), message, path, line, in_diff))
        elif key[0] == "not-whole":
            path, line = key[1].rsplit(":", 1)
            message = f"{what}; the archive defining them is no longer linked whole at {path}:{line}"
            causes.append(LossCause(tuple(symbols), message, path, int(line), _added_here(diff_text, path, int(line))))
        else:
            place = still_written(symbols[0]) if len(symbols) <= 5 else None
            where = f"; {symbols[0]} is still written at {place[0]}:{place[1]}" if place else ""
            in_diff = bool(place) and _added_here(diff_text, place[0], place[1])
            causes.append(
                LossCause(
                    tuple(symbols), what + where, place[0] if place else None, place[1] if place else None, in_diff
                )
            )
    return causes


def _visibility_added(base_step: dict, head_step: dict) -> tuple[str, tuple[str, int]] | None:
    before = {option["value"] for option in base_step.get("options", [])}
    for option in head_step.get("options", []):
        if VISIBILITY.search(option["value"]) and option["value"] not in before:
            return option["value"], (option["origin"][0], int(option["origin"][1]))
    return None


def _removal_naming(removed: list[tuple[str, int, str]], source: str) -> tuple[str, int, str] | None:
    """A CMake line the diff removes that names source (as written relative to that CMake file's folder)."""
    for path, line, text in removed:
        if not path.endswith(("CMakeLists.txt", ".cmake")):
            continue
        directory = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        relative = source[len(directory) :] if source.startswith(directory) else source
        if re.search(rf"(?<![\w/.-]){re.escape(relative)}(?![\w.-])", text):
            return path, line, text
    return None


def _added_here(diff_text: str, path: str, line: int) -> bool:
    from smoke.blame import changed_lines

    return line in changed_lines(diff_text).get(path, frozenset())
