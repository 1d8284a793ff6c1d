"""The C-linkage functions a Buck target defines: what its objects put into every binary.

A function has C linkage when its definition sits in an `extern "C"` block, when an earlier
declaration in one of the target's own headers gave it C linkage (the definition then inherits
it), or when it is defined in a `.c` file. Definitions that cannot collide at link time are left out:
`static` or `inline` ones, weak ones (`__attribute__((weak))`, `ET_WEAK`, `#pragma weak`), and
those under an `#if` the target's preprocessor flags turn off.

Only a target's unconditional sources count (not those inside `select()`): branches of a
select are alternatives, and two of them defining one symbol is the point of the select. On a
given platform, the branch chosen there counts: that is what the target compiles there.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.buck.targets import BuckTarget, Platform, Select, resolve
from bot.cpp.conditions import conditions_hold, defines_from_flags
from bot.facts import revision
from bot.facts.xref import header_entries

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

_C_SUFFIXES = (".c",)
_DEFINITION_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu")
_EXTERN_C = re.compile(rb'extern\s+"C"')
_NOT_LINKED = re.compile(r"\b(static|inline|__inline__|__forceinline__|constexpr)\b")
_WEAK = re.compile(r"\bweak\b|\bET_WEAK\b|\bweak_import\b")
_PRAGMA_WEAK = re.compile(r"^\s*#\s*pragma\s+weak\s+(\w+)", re.M)
_COMPILER_DEFINES = {"__cplusplus": "201703L"}
_FLAG_ATTRIBUTES = ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")


@dataclass(frozen=True, slots=True)
class Definition:
    """A C-linkage function defined in `path` at `line`; `linkage` says where C linkage comes from."""

    symbol: str
    path: str
    line: int
    linkage: str


def unconditional_sources(target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    """Repository paths of the sources a target always compiles (select() branches left out), or,
    on `platform`, of those it compiles there (the branch chosen there spliced in)."""
    value = target.attr("srcs")
    if platform is not None:
        value = resolve(value, platform)
    if not isinstance(value, (list, tuple)):
        return ()
    paths = []
    for item in value:
        if isinstance(item, Select):
            continue
        if isinstance(item, (list, tuple)) and item and isinstance(item[0], str):
            item = item[0]  # (source, [per-file flags])
        if isinstance(item, str) and not item.startswith((":", "//")):
            paths.append(posixpath.normpath(posixpath.join(target.package, item)))
    return tuple(dict.fromkeys(paths))


def _sources(model: BuildModel, target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    return revision.tree_memo(
        model, ("symbols:sources", target.cell, target.label, platform), lambda: unconditional_sources(target, platform)
    )


def target_defines(target: BuckTarget, platform: Platform | None = None) -> dict[str, str | None]:
    """Macros the target's own flags set on `platform` (None: select() branches included, a define
    in any branch counts)."""
    flags = []
    for attribute in _FLAG_ATTRIBUTES:
        flags.extend(str(flag) for flag in target.values(attribute, platform) if isinstance(flag, str))
    return {**_COMPILER_DEFINES, **defines_from_flags(flags)}


def prefetch_sources(model: BuildModel, targets: Iterable[BuckTarget], headers: bool = True) -> None:
    """Read the targets' sources (and own headers) in one batch: one round trip to git, not one per file."""
    paths = []
    for target in targets:
        paths.extend(p for p in _sources(model, target) if p.endswith(_DEFINITION_SUFFIXES))
        for attribute in ("exported_headers", "headers") if headers else ():
            paths.extend(header for _include, header in header_entries(target, attribute))
    model.tree.prefetch(paths)


def target_definitions(
    model: BuildModel, target: BuckTarget, name_prefix: str = "", platform: Platform | None = None
) -> tuple[Definition, ...]:
    """Every C-linkage function the target's unconditional sources define, in source order; on
    `platform`, those of the sources, flags and headers it has there.

    With `name_prefix`, only functions whose name starts with it (sources that do not contain
    the prefix are not parsed at all).
    """
    if platform is not None and not _configurable(target):
        platform = None  # the same sources, flags and headers on every platform: one answer for all
    found: list[Definition] = []
    defines: dict[str, str | None] | None = None
    key: tuple = ()
    headers: dict[str, str] | None = None
    for path in _sources(model, target, platform):
        if not path.endswith(_DEFINITION_SUFFIXES):
            continue
        data = model.tree.read(path)
        if data is None or (name_prefix and name_prefix.encode() not in data):
            continue
        if headers is None:
            headers = own_c_declarations(model, target, platform)
            defines = target_defines(target, platform)
            key = tuple(sorted(defines.items(), key=lambda item: item[0]))
        c_linkage_possible = path.endswith(_C_SUFFIXES) or _EXTERN_C.search(data)
        if not c_linkage_possible and not any(name.rsplit("::", 1)[-1].encode() in data for name in headers):
            continue  # nothing can give a definition of this file C linkage
        definitions = revision.tree_memo(
            model,
            ("symbols:definitions", path, key, tuple(sorted(headers.items()))),
            lambda path=path, defines=defines, headers=headers: _definitions(model, path, defines, headers),
        )
        found.extend(d for d in definitions if d.symbol.startswith(name_prefix))
    return tuple(found)


_READ_ATTRIBUTES = ("srcs", "headers", "exported_headers", *_FLAG_ATTRIBUTES)


def _configurable(target: BuckTarget) -> bool:
    """Whether a select() chooses any of the attributes `target_definitions` reads."""
    return any(_holds_select(target.attrs.get(attribute)) for attribute in _READ_ATTRIBUTES)


def _holds_select(value: object) -> bool:
    if isinstance(value, Select):
        return True
    if isinstance(value, list | tuple):
        return any(_holds_select(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_select(item) for item in value.values())
    return False


def own_c_declarations(model: BuildModel, target: BuckTarget, platform: Platform | None = None) -> dict[str, str]:
    """qualified name -> `header:line`, for functions the target's own headers declare `extern "C"`
    (on `platform`; None: every select() branch's headers).

    A library's shims are declared in the headers it lists (`headers`, `exported_headers`);
    the join stops there rather than following every include of every source.
    """
    found: dict[str, str] = {}
    for attribute in ("exported_headers", "headers"):
        for _include, header in header_entries(target, attribute, platform):
            for name, where in _c_declarations(model, header).items():
                found.setdefault(name, where)
    return found


def _definitions(
    model: BuildModel, path: str, defines: Mapping[str, str | None], headers: Mapping[str, str]
) -> tuple[Definition, ...]:
    data = model.tree.read(path)
    facts = model.source_facts(path)
    if data is None or facts is None:
        return ()
    is_c = path.endswith(_C_SUFFIXES)
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    weak_names = set(_PRAGMA_WEAK.findall(text))
    found = []
    for declaration in facts.declarations:
        if declaration.kind != "function" or not declaration.is_definition:
            continue
        if declaration.extern_c:
            linkage = f'`extern "C"` in {path}'
        elif is_c and declaration.qualified_name == declaration.name:
            linkage = "a C source"
        elif declaration.qualified_name in headers:
            linkage = f'`extern "C"` declaration in {headers[declaration.qualified_name]}'
        else:
            continue
        if conditions_hold(declaration.conditions, defines, assume_undefined_false=True) is not True:
            continue
        signature = _signature(lines, declaration.line, declaration.end_line)
        above = lines[declaration.line - 2] if declaration.line >= 2 else ""
        if (
            declaration.name in weak_names
            or _NOT_LINKED.search(signature)
            or _WEAK.search(signature)
            or _WEAK.search(above)
        ):
            continue
        found.append(Definition(declaration.name, path, declaration.line, linkage))
    return tuple(found)


def _signature(lines: list[str], start: int, end: int) -> str:
    """The definition's text up to the opening brace of its body."""
    parts = []
    for number in range(start, min(end, len(lines)) + 1):
        line = lines[number - 1]
        parts.append(line.split("{", 1)[0])
        if "{" in line:
            break
    return " ".join(parts)


def _c_declarations(model: BuildModel, header: str) -> dict[str, str]:
    """qualified name -> `header:line` of the functions one header declares `extern "C"`."""

    def compute() -> dict[str, str]:
        data = model.tree.read(header)
        if data is None or not _EXTERN_C.search(data):
            return {}
        facts = model.source_facts(header)
        declared: dict[str, str] = {}
        for declaration in facts.declarations if facts else ():
            if declaration.kind == "function" and declaration.extern_c:
                declared.setdefault(declaration.qualified_name, f"{header}:{declaration.line}")
        return declared

    return revision.tree_memo(model, ("symbols:c-declarations", header), compute)


def source_c_definitions(model: BuildModel, path: str, defines: Mapping[str, str | None]) -> tuple[Definition, ...]:
    """The C-linkage functions one source defines when compiled with `defines`.

    For a build that lists no headers (CMake), C linkage inherited from a declaration comes
    from the headers the source itself includes (`<executorch/...>` or next to it)."""
    data = model.tree.read(path)
    if data is None or not path.endswith(_DEFINITION_SUFFIXES):
        return ()
    headers = included_c_declarations(model, path)
    c_linkage_possible = path.endswith(_C_SUFFIXES) or _EXTERN_C.search(data)
    if not c_linkage_possible and not any(name.rsplit("::", 1)[-1].encode() in data for name in headers):
        return ()
    merged = {**_COMPILER_DEFINES, **defines}
    key = tuple(sorted(merged.items(), key=lambda item: item[0]))
    return revision.tree_memo(
        model,
        ("symbols:definitions", path, key, tuple(sorted(headers.items()))),
        lambda: _definitions(model, path, merged, headers),
    )


def included_c_declarations(model: BuildModel, path: str) -> dict[str, str]:
    """qualified name -> `header:line` for the `extern "C"` functions the headers `path` includes declare."""

    def compute() -> dict[str, str]:
        facts = model.source_facts(path)
        found: dict[str, str] = {}
        for include in facts.includes if facts else ():
            header = _include_path(model, path, include.target_text)
            if header is not None:
                for name, where in _c_declarations(model, header).items():
                    found.setdefault(name, where)
        return found

    return revision.tree_memo(model, ("symbols:included-c-declarations", path), compute)


def _include_path(model: BuildModel, source: str, written: str) -> str | None:
    """The repository file an include names: `executorch/<path>`, the path itself, or beside the source."""
    candidates = []
    if written.startswith("executorch/"):
        candidates.append(written[len("executorch/") :])
    candidates += [posixpath.normpath(posixpath.join(posixpath.dirname(source), written)), written]
    return next((c for c in candidates if model.tree.blob_id(c) is not None), None)
