"""A shared library passes another library's `--whole-archive` link to its consumers.

`-Wl,--whole-archive L -Wl,--no-whole-archive` in PUBLIC or INTERFACE scope of a shared library
T applies to T's own link and is then replayed at the link of everything that links T: each of
those binaries extracts all of L again. State that must exist once per process (a registry, a
`thread_local` current stream, a static allocator) then exists once per binary, and the copies
disagree. ExecuTorch had exactly this with `aoti_common_shims_slim` in `aoti_cuda_shims`: the
archive landed in three shipped binaries. In PRIVATE scope the pair applies to T's link only.

A library naming its own archive in INTERFACE scope (`executorch_target_link_options_shared_lib`)
is the intended idiom for "keep my objects in whoever links me" and is not reported; nor are
static libraries (CMake replays their PRIVATE link items too, so the scope changes nothing) and
INTERFACE libraries (whose only scope is INTERFACE).

Example (bad): `target_link_libraries(aoti_cuda_shims PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive)`.

Use instead: `target_link_libraries(aoti_cuda_shims PRIVATE -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive)`.
"""

from __future__ import annotations

import re
from typing import Iterator

from bot import cmake
from bot.check import CMAKE_FILES, Check, Example
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot

_REPLAYING_SCOPES = ("PUBLIC", "INTERFACE")
_SHARED_KINDS = ("SHARED_LIBRARY", "MODULE_LIBRARY")
_SCOPE_WORD = re.compile(r"(?<![\w$<{:])(PUBLIC|PRIVATE|INTERFACE|LINK_PUBLIC|LINK_PRIVATE|LINK_INTERFACE_LIBRARIES)(?![\w>}])")
_PAIR_WORDS = re.compile(
    r"^(?:-Wl,-?-(?:no-)?whole-archive|LINKER:-?-(?:no-)?whole-archive|-Wl,--(?:push|pop)-state|\$<LINK_LIBRARY:WHOLE_ARCHIVE,[^>]*>)$"
)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    seen: set[tuple[str, int, str]] = set()
    for profile in snap.config.cmake_profiles:  # the first profile that shows a pair reports it
        model = snap.head.cmake(profile)
        for name, target in sorted(model.targets.items()):
            if target.kind not in _SHARED_KINDS or target.imported:
                continue
            for pair in target.whole_archive:
                if pair.scope not in _REPLAYING_SCOPES or _same_library(model, name, pair.library):
                    continue
                if (pair.path, pair.line, f"{name}:{pair.library}") in seen:
                    continue
                seen.add((pair.path, pair.line, f"{name}:{pair.library}"))
                yield _hit(snap, name, target, pair, model.targets.get(pair.library))


def _same_library(model: cmake.CMakeModel, name: str, library: str) -> bool:
    """Whether `library` names `name` itself (directly or through an ALIAS)."""
    seen = set()
    while library not in seen:
        seen.add(library)
        if library == name:
            return True
        alias = model.targets.get(library)
        if alias is None or alias.alias_of is None:
            return False
        library = alias.alias_of
    return False


def _hit(
    snap: Snapshot, name: str, target: cmake.CMakeTarget, pair: cmake.WholeArchive, library: cmake.CMakeTarget | None
) -> Hit:
    text = snap.head.text(pair.path) or ""
    fix = None if pair.via else _private_fix(text, pair)
    advice = "move the pair into PRIVATE scope" + ("" if fix else " (in a `PRIVATE` group of its own)")
    evidence = [Evidence(target.path, target.line, f"`{name}` is defined here as a {target.kind.lower().replace('_', ' ')}")]
    if library is not None and not library.imported:
        evidence.append(Evidence(library.path, library.line, f"`{pair.library}`, which every consumer of `{name}` would extract again"))
    return Hit(
        path=pair.path,
        line=pair.line,
        message=(
            f"`{name}` is a shared library that links `{pair.library}` with `--whole-archive` in {pair.scope} scope: "
            f"the pair is replayed at the link of every target that links `{name}`, so each of them extracts all of "
            f"`{pair.library}` again and per-process state in it (registries, `thread_local`s) is duplicated across "
            f"binaries. Fix: {advice}."
        ),
        key=f"{name}:{pair.library}",
        target=name,
        offending_text=f"{pair.scope} {pair.library}",
        evidence=tuple(evidence),
        fix=fix,
    )


def _private_fix(text: str, pair: cmake.WholeArchive) -> Fix | None:
    """PUBLIC -> PRIVATE on the scope keyword's line, when that scope group holds only the pair."""
    lines = text.splitlines()
    if not 0 < pair.line <= len(lines):
        return None
    keyword_line = None
    for number in range(pair.line, max(0, pair.line - 20), -1):
        row = lines[number - 1].split("#", 1)[0]
        if number == pair.line:
            row = row[: row.find(pair.library)] if pair.library in row else row
        matches = list(_SCOPE_WORD.finditer(row))
        if matches:
            if matches[-1].group(1) != pair.scope:
                return None
            keyword_line = number
            break
        if "(" in row:
            return None
    if keyword_line is None:
        return None
    group = _group_words(lines, keyword_line)
    if group is None or any(word != pair.library and not _PAIR_WORDS.match(word) for word in group):
        return None
    original = lines[keyword_line - 1]
    replaced = _SCOPE_WORD.sub(lambda m: "PRIVATE" if m.group(1) == pair.scope else m.group(1), original, count=1)
    return Fix(pair.path, keyword_line, keyword_line, replaced, "link the archive whole for this library's own link only")


def _group_words(lines: list[str], keyword_line: int) -> list[str] | None:
    """The words of the scope group that starts on `keyword_line`, up to the next scope or `)`."""
    words: list[str] = []
    started = False
    for number in range(keyword_line, min(len(lines), keyword_line + 20) + 1):
        row = lines[number - 1].split("#", 1)[0]
        for token in re.findall(r'"[^"]*"|[^\s()]+|[()]', row):
            if not started:
                started = bool(_SCOPE_WORD.fullmatch(token))
                continue
            if token == ")" or _SCOPE_WORD.fullmatch(token):
                return words
            words.append(token.strip('"'))
    return None


_HEADER = (
    "add_library(aoti_common_shims_slim STATIC common_shims_slim.cpp)\n"
    "add_library(aoti_cuda_shims SHARED memory.cpp)\n"
)

CHECK = Check(
    id="link-whole-archive-public",
    inputs=CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Shared library replays another library's --whole-archive at every consumer's link",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "CMakeLists.txt": _HEADER
                + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PUBLIC -Wl,--whole-archive aoti_common_shims_slim  # expect: link-whole-archive-public\n"
                "         -Wl,--no-whole-archive\n"
                ")\n"
            }
        ),
    ),
    good=(
        Example(
            head={
                "CMakeLists.txt": _HEADER
                + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PRIVATE -Wl,--whole-archive aoti_common_shims_slim\n"
                "          -Wl,--no-whole-archive\n"
                ")\n"
                "# A library keeping its own objects in whoever links it: the intended idiom.\n"
                "target_link_options(\n"
                '  aoti_cuda_shims INTERFACE "SHELL:LINKER:--whole-archive $<TARGET_FILE:aoti_cuda_shims> LINKER:--no-whole-archive"\n'
                ")\n"
            }
        ),
    ),
)
