"""Files and directories: include, add_subdirectory, project, message."""

from __future__ import annotations

import dataclasses
import posixpath
from typing import TYPE_CHECKING

from bot.cmake.blocks import program_for
from bot.cmake.model import SOURCE_ROOT, repo_path
from bot.cmake.state import Frame
from bot.cmake.syntax import Command, ParseProblem
from bot.cmake.values import split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def include(ev: Evaluation, command: Command, frame: Frame) -> None:
    """include(): a file or module in the tree, or a file a modelled process wrote, run in the
    caller's scope (once under include_guard)."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    target = words[0]
    optional = "OPTIONAL" in words[1:]
    result_variable = words[words.index("RESULT_VARIABLE") + 1] if "RESULT_VARIABLE" in words[:-1] else None
    generated = ev.generated.get(ev.resolve(target, frame))
    if generated is not None:
        # A file an extract_sources.py run wrote (commands/processes.py): it only sets the lists.
        if result_variable:
            frame.scope.set(result_variable, ev.resolve(target, frame))
        for name, value in generated.variables():
            frame.scope.set(name, value)
        return
    path = _module_path(ev, target, frame)
    if result_variable:
        frame.scope.set(result_variable, posixpath.join(SOURCE_ROOT, path) if path else "NOTFOUND")
    if path is None:
        if ("/" in target or target.endswith(".cmake")) and not optional:
            ev.skipped.append(ParseProblem(command.path, command.line, f"include: {target} is not in the tree"))
        return
    if path in ev.include_guarded:
        return
    program = program_for(ev.tree.blob_id(path), ev.tree.read(path) or b"", path)
    if any(c.name == "include_guard" for c in program.file.commands):
        ev.include_guarded.add(path)
    ev.run_file(path, frame, command)


def _module_path(ev: Evaluation, target: str, frame: Frame) -> str | None:
    """The repository path include() would read, or None (a CMake built-in module)."""
    if "/" in target or target.endswith(".cmake"):
        resolved = repo_path(ev.resolve(target, frame))
        return resolved if resolved is not None and ev.tree.exists(resolved) else None
    module_dirs = split_list(ev.lookup(frame, "", "CMAKE_MODULE_PATH"))
    for directory in module_dirs:
        resolved = repo_path(posixpath.join(ev.resolve(directory, frame), target + ".cmake"))
        if resolved is not None and ev.tree.exists(resolved):
            return resolved
    fallback = f"tools/cmake/{target}.cmake"
    return fallback if ev.tree.exists(fallback) else None


def add_subdirectory(ev: Evaluation, command: Command, frame: Frame) -> None:
    """add_subdirectory(): the directory's CMakeLists.txt in a child scope."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    directory = repo_path(ev.resolve(words[0], frame))
    if directory is None:
        ev.skipped.append(ParseProblem(command.path, command.line, f"add_subdirectory: {words[0]} is outside the tree"))
        return
    ev.add_subdirectory(directory, dataclasses.replace(frame, call_sites=(), macro_arguments=None), command)


def set_project(ev: Evaluation, command: Command, frame: Frame) -> None:
    """project(): PROJECT_NAME, the project's directories and version."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    source_dir = frame.directory.source_dir
    values = {
        "PROJECT_NAME": words[0],
        "PROJECT_SOURCE_DIR": source_dir,
        "PROJECT_BINARY_DIR": frame.directory.binary_dir,
        f"{words[0]}_SOURCE_DIR": source_dir,
        f"{words[0]}_BINARY_DIR": frame.directory.binary_dir,
    }
    if "VERSION" in words[1:-1]:
        values["PROJECT_VERSION"] = words[words.index("VERSION") + 1]
    if not ev.defined(frame, "CMAKE_PROJECT_NAME"):
        values["CMAKE_PROJECT_NAME"] = words[0]
    for name, value in values.items():
        frame.scope.set(name, value)


def report_message(ev: Evaluation, command: Command, frame: Frame) -> None:
    """message(): FATAL_ERROR and SEND_ERROR reached under the profile are problems."""
    words = ev.expand(command.args, frame)
    if words and words[0] in ("FATAL_ERROR", "SEND_ERROR"):
        text = "".join(words[1:])
        ev.problem(command, f"message({words[0]}) reached under profile {ev.profile.name}: {text[:200]}")
