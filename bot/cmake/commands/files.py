"""Paths and files: file(GLOB|READ|RELATIVE_PATH|TO_CMAKE_PATH), get_filename_component, cmake_path."""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

from bot.cmake.model import SOURCE_ROOT, repo_path
from bot.cmake.reads import literal_directory
from bot.cmake.state import Frame
from bot.cmake.syntax import Command

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def run_file_command(ev: Evaluation, command: Command, frame: Frame) -> None:
    """file(GLOB|GLOB_RECURSE|READ|RELATIVE_PATH|TO_CMAKE_PATH) over the tree; nothing is written."""
    words = ev.expand(command.args, frame)
    if len(words) < 2:
        return
    operation = words[0].upper()
    if operation in ("GLOB", "GLOB_RECURSE") and len(words) >= 2:
        rest = words[2:]
        relative = None
        patterns = []
        skip = False
        for position, word in enumerate(rest):
            if skip:
                skip = False
                continue
            if word in ("RELATIVE", "LIST_DIRECTORIES"):
                if word == "RELATIVE" and position + 1 < len(rest):
                    relative = rest[position + 1]
                skip = True
            elif word not in ("CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"):
                patterns.append(ev.resolve(word, frame))
        found = _glob(ev, patterns, recursive=operation == "GLOB_RECURSE")
        if relative is not None:
            found = [posixpath.relpath(f, relative) for f in found]
        frame.scope.set(words[1], ";".join(found))
    elif operation == "READ" and len(words) >= 3:
        path = repo_path(ev.resolve(words[1], frame))
        data = ev.tree.read_text(path) if path else None
        frame.scope.set(words[2], ev.join("", [data or ""], command))
    elif operation == "RELATIVE_PATH" and len(words) >= 4:
        # CMake treats an empty path as the current directory; relpath() would refuse it.
        frame.scope.set(words[1], posixpath.relpath(words[3] or ".", words[2] or "."))
    elif operation == "TO_CMAKE_PATH" and len(words) >= 3:
        frame.scope.set(words[2], words[1].replace("\\", "/"))


def _glob(ev: Evaluation, patterns: list[str], recursive: bool) -> list[str]:
    """The model paths of tree files matching any of the (model-path) glob patterns, sorted."""
    found: dict[str, None] = {}
    for pattern in patterns:
        relative = repo_path(pattern)
        if relative is None:
            continue
        directory, name = posixpath.split(relative)
        # GLOB_RECURSE matches the file pattern in every directory below the given one.
        middle = "(?:.*/)?" if recursive else ""
        prefix = _glob_regex(directory) + "/" if directory else ""
        # Asked of the tree (recorded: a model is reused only where every glob matches the same).
        for path in ev.tree.glob(literal_directory(directory), prefix + middle + _glob_regex(name) + r"\Z"):
            found[posixpath.join(SOURCE_ROOT, path)] = None
    return sorted(found)


def get_filename_component(ev: Evaluation, command: Command, frame: Frame) -> None:
    """get_filename_component(): NAME, DIRECTORY, EXT, ABSOLUTE, ... of a path."""
    words = ev.expand(command.args, frame)
    if len(words) < 3:
        return
    variable, path, mode = words[0], words[1], words[2].upper()
    name = posixpath.basename(path)
    results = {
        "NAME": name,
        "DIRECTORY": posixpath.dirname(path),
        "PATH": posixpath.dirname(path),
        "NAME_WE": name.split(".", 1)[0],
        "NAME_WLE": name.rsplit(".", 1)[0] if "." in name else name,
        "EXT": "." + name.split(".", 1)[1] if "." in name else "",
        "LAST_EXT": "." + name.rsplit(".", 1)[1] if "." in name else "",
        "ABSOLUTE": ev.resolve(path, frame),
        "REALPATH": ev.resolve(path, frame),
    }
    if mode in results:
        frame.scope.set(variable, results[mode])


def cmake_path(ev: Evaluation, command: Command, frame: Frame) -> None:
    """cmake_path(GET|SET|APPEND|NORMAL_PATH) on a path variable."""
    words = ev.expand(command.args, frame)
    if len(words) < 3:
        return
    operation, variable = words[0], words[1]
    path = ev.lookup(frame, "", variable)
    if operation == "GET" and len(words) >= 4:
        name = posixpath.basename(path)
        parts = {
            "FILENAME": name,
            "STEM": name.split(".", 1)[0] if not name.startswith(".") else name,
            "EXTENSION": "." + name.split(".", 1)[1] if "." in name.lstrip(".") else "",
            "PARENT_PATH": posixpath.dirname(path),
            "ROOT_PATH": "/" if path.startswith("/") else "",
            "RELATIVE_PART": path.lstrip("/"),
        }
        if words[2] in parts:
            frame.scope.set(words[-1], parts[words[2]])
    elif operation in ("SET", "APPEND"):
        pieces = [w for w in words[2:] if w not in ("NORMALIZE", "OUTPUT_VARIABLE")]
        out = words[words.index("OUTPUT_VARIABLE") + 1] if "OUTPUT_VARIABLE" in words[:-1] else variable
        pieces = [p for p in pieces if p != out or "OUTPUT_VARIABLE" not in words]
        value = posixpath.join(path, *pieces) if operation == "APPEND" else (pieces[0] if pieces else "")
        frame.scope.set(out, posixpath.normpath(value) if "NORMALIZE" in words else value)
    elif operation == "NORMAL_PATH":
        out = words[words.index("OUTPUT_VARIABLE") + 1] if "OUTPUT_VARIABLE" in words[:-1] else variable
        frame.scope.set(out, posixpath.normpath(path) if path else "")


def _glob_regex(pattern: str) -> str:
    """A file(GLOB) pattern as a regex where `*` and `?` stay inside one path component.

    As in Python's fnmatch, every `*` but the last takes the first place where the text after
    it matches, inside an atomic group: a pattern of many `*` then cannot backtrack
    polynomially over a long path (and taking the first place never loses a match).
    """
    pieces = pattern.split("*")
    parts = [_glob_literal(pieces[0])]
    for middle in pieces[1:-1]:
        parts.append(f"(?>[^/]*?{_glob_literal(middle)})")
    if len(pieces) > 1:
        parts.append("[^/]*" + _glob_literal(pieces[-1]))
    return "".join(parts)


def _glob_literal(text: str) -> str:
    return "".join("[^/]" if char == "?" else re.escape(char) for char in text)
