"""The compiler's and the linker's words, read back as values (never reworded)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# GCC and Clang: `path:line:col: error: text` (`fatal error` for a missing include).
_ERROR = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:(?P<column>\d+):)?\s*(?P<kind>fatal error|error):\s*(?P<text>.*)$"
)
_MISSING = re.compile(r"^(?P<include>.+?): No such file or directory$")
# GNU ld / lld, quoted `sym' (ld) or 'sym' / `sym` (lld).
_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:) [`'](?P<symbol>[^`']+)['`]")
_DUPLICATE = re.compile(r"multiple definition of [`'](?P<symbol>[^`']+)['`]|duplicate symbol: (?P<lld>.+)$")
_IN_OBJECT = re.compile(r"(?P<object>[\w./-]+\.o): in function")


@dataclass(frozen=True, slots=True)
class CompileError:
    """The first error a compile reported: where (as the compiler named the file) and its words."""

    path: str
    line: int
    text: str
    missing_include: str | None = None  # set for `fatal error: X: No such file or directory`


@dataclass(frozen=True, slots=True)
class LinkProblem:
    """One symbol the linker could not resolve, or found defined twice, with its words."""

    kind: str  # "undefined" or "duplicate"
    symbol: str
    object: str | None  # the object file the linker named first on that line, if any
    text: str


def first_error(output: str) -> CompileError | None:
    """The first error in a compiler's output (warnings and notes skipped), or None."""
    for line in output.splitlines():
        match = _ERROR.match(line.strip())
        if match is None:
            continue
        text = match.group("text").strip()
        missing = _MISSING.match(text) if match.group("kind") == "fatal error" else None
        return CompileError(
            match.group("path"), int(match.group("line")), text, missing.group("include") if missing else None
        )
    return None


def link_problems(output: str) -> tuple[LinkProblem, ...]:
    """Every undefined or duplicate symbol a link reported, in the linker's order, each once."""
    found: dict[tuple[str, str], LinkProblem] = {}
    current: str | None = None  # ld names the object on an `in function` line before the problem
    for line in output.splitlines():
        line = line.strip()
        named = _IN_OBJECT.search(line)
        if named is not None and "in function" in line:
            current = named.group("object")
        for kind, pattern in (("undefined", _UNDEFINED), ("duplicate", _DUPLICATE)):
            match = pattern.search(line)
            if match is None:
                continue
            symbol = (match.group("symbol") if kind == "undefined" else match.group(1) or match.group("lld")).strip()
            found.setdefault((kind, symbol), LinkProblem(kind, symbol, current, line))
    return tuple(found.values())


_DEFINING = frozenset("TDBRVWtdbrvwu")  # nm's types of a symbol an object defines


def defined_symbols(output: str) -> frozenset[str]:
    """The symbols `nm -C --defined-only` lists (`address type name`), demangled as the linker names them."""
    found = set()
    for line in output.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in _DEFINING:
            found.add(parts[2])
    return frozenset(found)
