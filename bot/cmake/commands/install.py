"""install(): which targets are installed and which files (FILES, PROGRAMS, DIRECTORY) land where."""

from __future__ import annotations

import fnmatch
import posixpath
from typing import TYPE_CHECKING

from bot.cmake.model import InstalledFile, repo_path
from bot.cmake.regexes import RegexError, RegexTimeout
from bot.cmake.state import Frame, join_conditions, place
from bot.cmake.syntax import Command

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation

_INSTALL_KEYWORDS = frozenset(
    {
        "EXPORT",
        "RUNTIME_DEPENDENCIES",
        "RUNTIME_DEPENDENCY_SET",
        "ARCHIVE",
        "LIBRARY",
        "RUNTIME",
        "OBJECTS",
        "FRAMEWORK",
        "BUNDLE",
        "PRIVATE_HEADER",
        "PUBLIC_HEADER",
        "RESOURCE",
        "FILE_SET",
        "CXX_MODULES_BMI",
        "DESTINATION",
        "PERMISSIONS",
        "CONFIGURATIONS",
        "COMPONENT",
        "NAMELINK_COMPONENT",
        "OPTIONAL",
        "EXCLUDE_FROM_ALL",
        "NAMELINK_ONLY",
        "NAMELINK_SKIP",
        "INCLUDES",
        "TYPE",
        "RENAME",
        "FILES_MATCHING",
        "PATTERN",
        "REGEX",
        "USE_SOURCE_PERMISSIONS",
        "FILE_PERMISSIONS",
        "DIRECTORY_PERMISSIONS",
        "MESSAGE_NEVER",
    }
)


def install(ev: Evaluation, command: Command, frame: Frame) -> None:
    """install(TARGETS|FILES|PROGRAMS|DIRECTORY ...): what is installed, and where."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    mode = words[0]
    named = []
    for word in words[1:]:
        if word in _INSTALL_KEYWORDS:
            break
        named.append(word)
    destination = words[words.index("DESTINATION") + 1] if "DESTINATION" in words[:-1] else ""
    condition = join_conditions(frame.conditions)
    path, line, _via = place(command, frame)
    if mode == "TARGETS":
        for name in named:
            target = ev.target(name, command)
            if target is not None:
                target.installed = True
    elif mode in ("FILES", "PROGRAMS"):
        for name in named:
            relative = repo_path(ev.resolve(name, frame))
            if relative is not None:
                ev.installed_files.append(InstalledFile(relative, path, line, destination, condition))
    elif mode == "DIRECTORY":
        for directory in named:
            try:
                files = _directory_files(ev, directory, words, frame)
            except RegexTimeout as timeout:
                ev.limit(command.path, command.line, f"install(DIRECTORY ... REGEX): {timeout}")
                return
            for relative in files:
                ev.installed_files.append(InstalledFile(relative, path, line, destination, condition))


def _directory_files(ev: Evaluation, directory: str, words: list[str], frame: Frame) -> list[str]:
    """The tree files install(DIRECTORY) copies, after PATTERN/REGEX and EXCLUDE rules."""
    base = repo_path(ev.resolve(directory, frame))
    if base is None:
        return []
    prefix = f"{base}/" if base else ""
    include: list[tuple[str, str]] = []
    exclude: list[tuple[str, str]] = []
    for position, word in enumerate(words):
        if word in ("PATTERN", "REGEX") and position + 1 < len(words):
            rule = (word, words[position + 1])
            is_excluded = position + 2 < len(words) and words[position + 2] == "EXCLUDE"
            (exclude if is_excluded else include).append(rule)
    files_matching = "FILES_MATCHING" in words

    def matches(path: str, rule: tuple[str, str]) -> bool:
        kind, pattern = rule
        if kind == "REGEX":
            try:
                return ev.regexes.search(pattern, path) is not None
            except RegexError:
                return False
        return fnmatch.fnmatchcase(posixpath.basename(path), pattern) or fnmatch.fnmatchcase(path, "*/" + pattern)

    chosen = []
    for path in ev.tree.paths_under(prefix):
        if files_matching and not any(matches(path, rule) for rule in include):
            continue
        if any(matches(path, rule) for rule in exclude):
            continue
        chosen.append(path)
    return chosen
