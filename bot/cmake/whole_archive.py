"""Whole-archive detection: which libraries a sequence of link items links whole."""

from __future__ import annotations

import re
from typing import Sequence

from bot.cmake.generator_expressions import split_top_level
from bot.cmake.model import Scoped, WholeArchive

_TARGET_FILE = re.compile(r"^\$<TARGET(?:_LINKER)?_FILE:([^>]+)>$")
_LINK_LIBRARY_WHOLE = re.compile(r"^\$<LINK_LIBRARY:WHOLE_ARCHIVE,(.+)>$")
_WHOLEARCHIVE_FLAG = re.compile(r"^[/-]WHOLEARCHIVE:(.+)$", re.IGNORECASE)
_MSVC_FLAG = re.compile(r"^/[A-Za-z]+(:|$)")


def _linker_words(item: str) -> list[str]:
    """What one link item passes to the linker: flags and file names, wrappers removed."""
    if item.startswith("SHELL:"):
        return [word for part in item[len("SHELL:"):].split() for word in _linker_words(part)]
    for prefix in ("LINKER:", "-Wl,", "-Xlinker,"):
        if item.startswith(prefix):
            return [word for word in split_top_level(item[len(prefix):], ",") if word]
    return [item]


def _library_name(word: str) -> str:
    match = _TARGET_FILE.match(word)
    return match.group(1) if match else word


def whole_archives(items: Sequence[Scoped]) -> list[WholeArchive]:
    """Libraries linked whole by a sequence of link items (libraries or link options), in order.

    Tracks `--whole-archive`/`--no-whole-archive` and `--push-state`/`--pop-state` across
    items, `-force_load <lib>`, `/WHOLEARCHIVE:<lib>` and `$<LINK_LIBRARY:WHOLE_ARCHIVE,...>`.
    """
    found: list[WholeArchive] = []
    states = [False]
    force_load_next = False
    for item in items:
        for word in _linker_words(item.value):
            def record(library: str) -> None:
                found.append(WholeArchive(_library_name(library), item.scope, item.path, item.line,
                                          item.condition_text, item.via))

            link_library = _LINK_LIBRARY_WHOLE.match(word)
            flag = _WHOLEARCHIVE_FLAG.match(word)
            if word in ("--whole-archive", "-whole-archive"):
                states[-1] = True
            elif word in ("--no-whole-archive", "-no-whole-archive"):
                states[-1] = False
            elif word == "--push-state":
                states.append(states[-1])
            elif word == "--pop-state":
                if len(states) > 1:
                    states.pop()
                else:
                    states[-1] = False
            elif word == "-force_load":
                force_load_next = True
            elif word.startswith("-force_load,"):
                record(word[len("-force_load,"):])
            elif flag:
                record(flag.group(1))
            elif link_library:
                for library in split_top_level(link_library.group(1), ","):
                    record(library)
            elif word.startswith("-") or _MSVC_FLAG.match(word):
                force_load_next = False
            elif force_load_next or states[-1]:
                record(word)
                force_load_next = False
    return found

