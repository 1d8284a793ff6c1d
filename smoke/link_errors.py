"""Link and load failures named by their cause: the linker's first `multiple definition`, `undefined
reference` and the loader's `undefined symbol` lines, the objects involved traced back to their sources,
and the line of the pull request that put a source there.

"collect2: error: ld returned 1 exit status" is the linker's last line and says nothing; the first lines
of the kinds below say which symbol and which two objects. An object is one the smoke build compiled
(`objects/<target>/<source with / as __>.o`) or a member of an archive it made (`libX.a(member.o)`), so
each maps back to a repository source and the target that lists it. A source is blamed on the pull
request when a line the diff adds names it in a CMake file (it joined a source list) or when the
definition's own line is added.

Pure apart from reading the checkout's sources to find a definition's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# GNU ld (2.42, as g++ 13 drives it):
#   /usr/bin/ld: OBJ: in function `f':
#   file.cpp:(.text+0x0): multiple definition of `f'; OTHER(member.o):file.cpp:(.text+0x10): first defined here
#   file.cpp:(.text+0x8): undefined reference to `g'
# Without an "in function" line the object starts the line itself: "/usr/bin/ld: OBJ:(.text+0x0): ...".
IN_FUNCTION = re.compile(r"^(?:\S*ld(?:\.\w+)?: )?(?P<object>[^\s:]+\.(?:o|so)(?:\))?): in function")
OBJECT_FIRST = re.compile(r"^\S*ld(?:\.\w+)?: (?P<object>[^\s:]+\.o\)?):")
MULTIPLE = re.compile(r"multiple definition of [`'](?P<symbol>[^'`]+)'; (?P<first>[^\s:]+\.o\)?):")
UNDEFINED_REFERENCE = re.compile(r"undefined reference to [`'](?P<symbol>[^'`]+)'")
UNDEFINED_SYMBOL = re.compile(r"undefined symbol: (?P<symbol>\S+)")
ARCHIVE_MEMBER = re.compile(r"^(?P<archive>.+/(?P<name>[^/]+\.a))\((?P<member>[^)]+)\)$")
DEFINITION_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".c")
CMAKE_NAMES = ("CMakeLists.txt", ".cmake")


@dataclass(frozen=True, slots=True)
class RawLinkError:
    """One line of the linker or loader, as written: kind is multiple-definition, undefined-reference or
    undefined-symbol; objects holds the object that has it first, then (for a duplicate) the first one."""

    kind: str
    symbol: str
    objects: tuple[str, ...]
    line: str


@dataclass(frozen=True, slots=True)
class ObjectSource:
    """An object of a link traced back to the checkout."""

    object: str  # as the linker wrote it, shortened to the file (and archive member) name
    target: str | None  # the target whose objects or archive it is
    source: str | None  # repository path of the source compiled into it
    definition: tuple[str, int] | None  # where the symbol is defined in that source


@dataclass(frozen=True, slots=True)
class LinkProblem:
    """A link or load failure with its objects traced to sources, and the diff line that caused it."""

    kind: str
    symbol: str
    objects: tuple[ObjectSource, ...]
    linking: str  # the target whose link (or the library whose load) failed
    cause: tuple[str, int] | None = None  # a line the pull request adds that put it there
    also: int = 0  # further symbols failing the same way between the same objects

    def sources(self) -> tuple[str, ...]:
        return tuple(item.source for item in self.objects if item.source)

    def message(self) -> str:
        verb = {
            "multiple-definition": "multiple definition of",
            "undefined-reference": "undefined reference to",
            "undefined-symbol": "undefined symbol",
        }[self.kind]
        places = [_describe(item) for item in self.objects]
        text = f"{verb} `{self.symbol}`"
        if self.kind == "multiple-definition" and len(places) == 2:
            text += f" between {places[0]} and {places[1]}"
        elif places:
            text += f" in {places[0]}"
        text += f" (linking {self.linking})"
        if self.also:
            text += f"; {self.also} more symbol(s) the same way"
        if self.cause:
            text += f"; {self.cause[0]}:{self.cause[1]}, a line this pull request adds, put it there"
        return text

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "symbol": self.symbol,
            "linking": self.linking,
            "also": self.also,
            "cause": list(self.cause) if self.cause else None,
            "message": self.message(),
            "objects": [
                {
                    "object": item.object,
                    "target": item.target,
                    "source": item.source,
                    "definition": list(item.definition) if item.definition else None,
                }
                for item in self.objects
            ],
        }


def _describe(item: ObjectSource) -> str:
    where = f"{item.definition[0]}:{item.definition[1]}" if item.definition else (item.source or item.object)
    return f"{where} ({item.target})" if item.target else where


def parse_link_errors(text: str) -> list[RawLinkError]:
    """The multiple-definition, undefined-reference and undefined-symbol lines, in the order written."""
    found: list[RawLinkError] = []
    current: str | None = None
    for row in text.splitlines():
        row = row.strip()
        context = IN_FUNCTION.match(row)
        if context:
            current = context.group("object")
            continue
        leading = OBJECT_FIRST.match(row)
        holder = leading.group("object") if leading else current
        duplicate = MULTIPLE.search(row)
        if duplicate:
            objects = tuple(name for name in (holder, duplicate.group("first")) if name)
            found.append(RawLinkError("multiple-definition", duplicate.group("symbol"), objects, row))
            continue
        undefined = UNDEFINED_REFERENCE.search(row)
        if undefined:
            found.append(
                RawLinkError("undefined-reference", undefined.group("symbol"), (holder,) if holder else (), row)
            )
            continue
        missing = UNDEFINED_SYMBOL.search(row)
        if missing:
            found.append(RawLinkError("undefined-symbol", missing.group("symbol"), (), row))
    return found


def trace_object(
    written: str, objects: dict[str, tuple[str, str]], archives: dict[str, str]
) -> tuple[str | None, str | None, str]:
    """(target, source, short name) of an object the linker named. objects: object file name -> (target,
    source); archives: archive file name -> target."""
    member = ARCHIVE_MEMBER.match(written)
    if member:
        target = archives.get(member.group("name"))
        entry = objects.get(member.group("member"))
        source = entry[1] if entry and (target is None or entry[0] == target) else None
        return target, source, f"{member.group('name')}({member.group('member')})"
    name = Path(written).name
    entry = objects.get(name)
    if entry:
        return entry[0], entry[1], name
    return archives.get(name), None, name


def find_definition(checkout: Path, source: str, symbol: str) -> tuple[str, int] | None:
    """The line in source that defines symbol (a C name): its name, then `(`, on a line that is no
    declaration (ends in `;`) and no call inside a string."""
    path = checkout / source
    if not path.is_file() or path.suffix not in DEFINITION_SUFFIXES:
        return None
    name = symbol.split("(")[0].split("::")[-1]
    pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
    for number, text in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        row = text.replace('extern "C"', "")  # a linkage, not a string the name is quoted in
        if pattern.search(row) and not row.rstrip().endswith(";") and '"' not in row.split(name)[0]:
            stripped = row.lstrip()
            if not stripped.startswith(("//", "*", "return ", "if ", "ET_", "AOTI_SHIM_CHECK")):
                return source, number
    return None


def added_cmake_line(
    source: str, added: dict[str, frozenset[int]], diff_lines: dict[tuple[str, int], str]
) -> tuple[str, int] | None:
    """A line the diff adds to a CMake file that names source (relative to that file's directory)."""
    for path, numbers in sorted(added.items()):
        if not path.endswith(CMAKE_NAMES):
            continue
        directory = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        relative = source[len(directory) :] if source.startswith(directory) else source
        pattern = re.compile(rf"(?<![\w/.-]){re.escape(relative)}(?![\w.-])")
        for number in sorted(numbers):
            if pattern.search(diff_lines.get((path, number), "")):
                return path, number
    return None


def added_text(diff_text: str) -> dict[tuple[str, int], str]:
    """(head path, line) -> text, for each line the unified diff adds."""
    lines: dict[tuple[str, int], str] = {}
    path, number = None, 0
    for row in diff_text.splitlines():
        if row.startswith("+++ "):
            target = row[4:].strip().split("\t")[0]
            path = None if target == "/dev/null" else target.removeprefix("b/")
            continue
        hunk = re.match(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", row)
        if hunk:
            number = int(hunk.group(1))
            continue
        if path is None or row.startswith(("--- ", "diff ", "index ")):
            continue
        if row.startswith("+"):
            lines[(path, number)] = row[1:]
            number += 1
        elif row.startswith(" "):
            number += 1
    return lines


def explain(
    raw: list[RawLinkError],
    linking: str,
    objects: dict[str, tuple[str, str]],
    archives: dict[str, str],
    checkout: Path,
    diff_text: str = "",
) -> list[LinkProblem]:
    """Each distinct (kind, objects) pair once, its first symbol named and the rest counted; traced to
    sources and definitions, and to the diff line that put a source into the link."""
    added_lines = added_text(diff_text)
    added: dict[str, set[int]] = {}
    for path, number in added_lines:
        added.setdefault(path, set()).add(number)
    frozen = {path: frozenset(numbers) for path, numbers in added.items()}
    groups: dict[tuple, list[RawLinkError]] = {}
    for error in raw:
        groups.setdefault((error.kind, tuple(_short(name) for name in error.objects)), []).append(error)
    problems = []
    for (kind, _), errors in groups.items():
        first = errors[0]
        traced = []
        for written in first.objects:
            target, source, short = trace_object(written, objects, archives)
            definition = (
                find_definition(checkout, source, first.symbol) if source and kind != "undefined-reference" else None
            )
            traced.append(ObjectSource(short, target, source, definition))
        cause = None
        for item in traced:
            if item.definition and item.definition[1] in frozen.get(item.definition[0], ()):
                cause = item.definition
            elif item.source:
                cause = cause or added_cmake_line(item.source, frozen, added_lines)
        problems.append(
            LinkProblem(kind, first.symbol, tuple(traced), linking, cause, len({error.symbol for error in errors}) - 1)
        )
    return sorted(problems, key=lambda problem: problem.cause is None)


def _short(written: str) -> str:
    member = ARCHIVE_MEMBER.match(written)
    return f"{member.group('name')}({member.group('member')})" if member else Path(written).name
