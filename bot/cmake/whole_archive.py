"""Whole-archive detection: which libraries a sequence of link items links whole."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.cmake.generator_expressions import split_top_level
from bot.cmake.model import Scoped, WholeArchive

_TARGET_FILE = re.compile(r"^\$<TARGET(?:_LINKER)?_FILE:([^>]+)>$")
_LINK_LIBRARY_WHOLE = re.compile(r"^\$<LINK_LIBRARY:WHOLE_ARCHIVE,(.+)>$")
_WHOLEARCHIVE_FLAG = re.compile(r"^[/-]WHOLEARCHIVE:(.+)$", re.IGNORECASE)
_MSVC_FLAG = re.compile(r"^/[A-Za-z]+(:|$)")


def _linker_words(item: str) -> list[str]:
    """What one link item passes to the linker: flags and file names, wrappers removed."""
    if item.startswith("SHELL:"):
        return [word for part in item[len("SHELL:") :].split() for word in _linker_words(part)]
    for prefix in ("LINKER:", "-Wl,", "-Xlinker,"):
        if item.startswith(prefix):
            return [word for word in split_top_level(item[len(prefix) :], ",") if word]
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

    def record(item: Scoped, library: str) -> None:
        found.append(
            WholeArchive(_library_name(library), item.scope, item.path, item.line, item.condition_text, item.via)
        )

    for item in items:
        for word in _linker_words(item.value):
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
                record(item, word[len("-force_load,") :])
            elif flag:
                record(item, flag.group(1))
            elif link_library:
                for library in split_top_level(link_library.group(1), ","):
                    record(item, library)
            elif word.startswith("-") or _MSVC_FLAG.match(word):
                force_load_next = False
            elif force_load_next or states[-1]:
                record(item, word)
                force_load_next = False
    return found


def whole_archive_run(items: Sequence[str], library: str) -> tuple[int, int] | None:
    """[start, stop) of the items, as written, that take `library` whole: from the item that
    turns whole-archive on to the one that turns it off (with a `--push-state` and
    `--pop-state` of their own around them), or the one item that does both. None when
    `library` is not taken whole by these items alone."""
    words = [_linker_words(item) for item in items]
    on_at: list[int | None] = [None]
    force_load_at = None
    for index, item_words in enumerate(words):
        for word in item_words:
            link_library = _LINK_LIBRARY_WHOLE.match(word)
            flag = _WHOLEARCHIVE_FLAG.match(word)
            if word in ("--whole-archive", "-whole-archive"):
                on_at[-1] = index if on_at[-1] is None else on_at[-1]
            elif word in ("--no-whole-archive", "-no-whole-archive", "--pop-state"):
                if word == "--pop-state" and len(on_at) > 1:
                    on_at.pop()
                else:
                    on_at[-1] = None
            elif word == "--push-state":
                on_at.append(on_at[-1])
            elif word == "-force_load":
                force_load_at = index
            elif word.startswith("-force_load,") or flag or link_library:
                names = (
                    [word[len("-force_load,") :]]
                    if word.startswith("-force_load,")
                    else [flag.group(1)]
                    if flag
                    else split_top_level(link_library.group(1), ",")
                    if link_library
                    else []
                )
                if library in map(_library_name, names):
                    return index, index + 1
            elif word.startswith("-") or _MSVC_FLAG.match(word):
                force_load_at = None
            elif _library_name(word) == library and force_load_at is not None:
                return force_load_at, index + 1
            elif _library_name(word) == library and on_at[-1] is not None:
                return _closed_run(words, on_at[-1], index)
    return None


def _closed_run(words: Sequence[list[str]], start: int, library_at: int) -> tuple[int, int] | None:
    """The run from `start` to the item that turns whole-archive off after `library_at`."""
    off = ("--no-whole-archive", "-no-whole-archive", "--pop-state")
    stop = next((i + 1 for i in range(library_at, len(words)) if any(w in off for w in words[i])), None)
    if stop is None:
        return None
    if start > 0 and words[start - 1] == ["--push-state"] and stop < len(words) and words[stop] == ["--pop-state"]:
        return start - 1, stop + 1
    return start, stop
