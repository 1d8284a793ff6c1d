"""A CMake file's block structure: which command ends each block and where each `if` branches.

CMake matches `if`/`endif`, `function`/`endfunction` and the rest while reading a file, so the
evaluator does it once per file and remembers the result by blob id, next to the parse.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from bot.cmake.syntax import CMakeFile, ParseProblem, clear_parse_cache, parse_cmake_cached


@dataclass(frozen=True, slots=True)
class Program:
    """A file's commands with block structure: opener index -> end index, if -> branches."""

    file: CMakeFile
    ends: Mapping[int, int]
    branches: Mapping[int, tuple[int, ...]]
    problems: tuple[ParseProblem, ...]


OPENERS = {
    "if": "endif",
    "foreach": "endforeach",
    "while": "endwhile",
    "function": "endfunction",
    "macro": "endmacro",
    "block": "endblock",
}
CLOSERS = {v: k for k, v in OPENERS.items()}


def structure(file: CMakeFile) -> Program:
    """Match block openers with their ends (CMake does this while reading, so do we)."""
    ends: dict[int, int] = {}
    branches: dict[int, list[int]] = {}
    problems: list[ParseProblem] = []
    stack: list[int] = []
    commands = file.commands
    for index, command in enumerate(commands):
        name = command.name
        if name in OPENERS:
            stack.append(index)
            if name == "if":
                branches[index] = [index]
        elif name in ("elseif", "else"):
            if stack and commands[stack[-1]].name == "if":
                branches[stack[-1]].append(index)
            else:
                problems.append(ParseProblem(file.path, command.line, f"{name}() without if()"))
        elif name in CLOSERS:
            if stack and commands[stack[-1]].name == CLOSERS[name]:
                ends[stack.pop()] = index
            else:
                problems.append(ParseProblem(file.path, command.line, f"{name}() without {CLOSERS[name]}()"))
    for index in stack:
        opener = commands[index]
        problems.append(ParseProblem(file.path, opener.line, f"{opener.name}() without {OPENERS[opener.name]}()"))
        ends[index] = len(commands)
    return Program(file, ends, {k: tuple(v) for k, v in branches.items()}, tuple(problems))


_programs: OrderedDict[tuple[str, str], Program] = OrderedDict()


def program_for(blob_id: str | None, data: bytes, path: str) -> Program:
    """The parsed, structured file, remembered by (blob id, path) in a bounded LRU."""
    key = (blob_id or "", path)
    if blob_id is not None and key in _programs:
        _programs.move_to_end(key)
        return _programs[key]
    program = structure(parse_cmake_cached(blob_id, data, path))
    if blob_id is not None:
        _programs[key] = program
        if len(_programs) > 4096:
            _programs.popitem(last=False)
    return program


def clear_caches() -> None:
    """Forget remembered parses and block structures (benchmarks measure cold runs with it)."""
    _programs.clear()
    clear_parse_cache()
