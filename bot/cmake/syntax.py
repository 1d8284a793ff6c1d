"""CMake source -> a flat list of command invocations, parsed with tree-sitter-cmake.

CMake's own reader produces the same thing: a flat sequence of commands whose arguments are
still raw text. Block structure (`if`/`endif`, `function`/`endfunction`) and variable
expansion are the evaluator's business (`bot/cmake/interpreter.py`), because CMake decides them at
evaluation time too. Syntax errors are returned as `ParseProblem` values, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_cmake
from tree_sitter import Language, Node, Parser, Tree


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """A file that could not be read or evaluated fully, at a place."""

    path: str
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument as written.

    `text` is raw: quotes stripped from a quoted argument, but escapes and `${}` references
    left for the evaluator. A bracket argument (`[[...]]`) is literal: `bracket` is True and
    nothing in it is expanded.
    """

    text: str
    quoted: bool
    line: int
    bracket: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """One command invocation: `name_lower(args...)` spanning lines [line, end_line]."""

    name: str
    args: tuple[Arg, ...]
    line: int
    end_line: int
    path: str


@dataclass(frozen=True, slots=True)
class CMakeFile:
    """A parsed CMake file: its commands in order and any syntax problems."""

    path: str
    commands: tuple[Command, ...]
    problems: tuple[ParseProblem, ...]


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cmake.language()))


def syntax_tree(data: bytes) -> Tree:
    """The tree-sitter-cmake tree of UTF-8 CMake source (span edits read it, bot/cmake/edits.py)."""
    return _parser().parse(data)


def parse_cmake(source: str | bytes, path: str) -> CMakeFile:
    """Parse CMake `source` (the text of `path`) into its flat command list."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    root = syntax_tree(data).root_node
    commands: list[Command] = []
    problems: list[ParseProblem] = []
    _collect(root, path, commands, problems)
    return CMakeFile(path, tuple(commands), tuple(problems))


# Parsing is the expensive step of building a CMake model; a second model of the same tree
# (base and head share most files) should not parse anything again: the fact cache keeps it.
def parse_cmake_cached(blob_id: str | None, source: str | bytes, path: str) -> CMakeFile:
    """`parse_cmake`, kept in the fact cache (bot/store/memo.py) by (blob id, path)."""
    if blob_id is None:
        return parse_cmake(source, path)
    from bot.store import memo as cache

    return cache.fact("cmake-parse", (blob_id, path), lambda: parse_cmake(source, path), persist=True)


def clear_parse_cache() -> None:
    """Forget remembered parses (benchmarks measure cold runs with it)."""
    from bot.store import memo as cache

    cache.current().forget("cmake-parse")


def _collect(root: Node, path: str, commands: list[Command], problems: list[ParseProblem]) -> None:
    """Walk `root` in document order, appending commands and syntax problems.

    The walk keeps its own stack: tree-sitter nests one level per `if()` block, and a pull
    request can nest thousands (Python's recursion would give out near 450).
    """
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            problems.append(_problem_at(node, path))
            # Error recovery may still have recognised whole commands inside the broken region.
            inner = [c for c in node.children if c.type.endswith("_command") or c.type in _BLOCK_NODES]
        elif node.type.endswith("_command"):
            commands.append(_command(node, path))
            inner = [c for c in node.children if c.has_error]
        else:
            inner = node.children
        pending.extend(reversed(inner))


_BLOCK_NODES = frozenset(
    {"if_condition", "foreach_loop", "while_loop", "function_def", "macro_def", "block_def", "body"}
)


def _problem_at(node: Node, path: str) -> ParseProblem:
    text = (node.text or b"").decode("utf-8", errors="replace").strip().splitlines()
    near = text[0][:60] if text else ""
    what = f"missing {node.type}" if node.is_missing else "syntax error"
    return ParseProblem(path, node.start_point[0] + 1, f"{what} near {near!r}" if near else what)


def _command(node: Node, path: str) -> Command:
    name = ""
    args: tuple[Arg, ...] = ()
    for child in node.children:
        if child.type == "identifier":
            name = (child.text or b"").decode("utf-8", errors="replace").lower()
        elif child.type == "argument_list":
            args = _arguments(child)
        elif not name and child.is_named:
            # if_command, foreach_command, ...: the keyword is a named child of its own type.
            name = child.type
    if not name:
        name = node.type.removesuffix("_command")
    return Command(name, args, node.start_point[0] + 1, node.end_point[0] + 1, path)


def _arguments(argument_list: Node) -> tuple[Arg, ...]:
    args: list[Arg] = []
    previous_end = -1
    for child in argument_list.children:
        if child.type != "argument":
            # `(` and `)` inside if() conditions are grouping tokens and must survive.
            if child.type in ("(", ")"):
                args.append(Arg(child.type, False, child.start_point[0] + 1))
                previous_end = -1
            continue
        arg = _argument(child)
        # CMake reads `-DX="a b"` as one unquoted argument that keeps its quotes; the grammar
        # splits it in two, so join pieces that touch.
        if args and child.start_byte == previous_end and not args[-1].bracket and not args[-1].quoted:
            raw = (child.text or b"").decode("utf-8", errors="replace")
            args[-1] = Arg(args[-1].text + raw, False, args[-1].line)
        else:
            args.append(arg)
        previous_end = child.end_byte
    return tuple(args)


def _argument(node: Node) -> Arg:
    line = node.start_point[0] + 1
    inner = node.children[0] if node.children else node
    if inner.type == "bracket_argument":
        content = next((c for c in inner.children if c.type == "bracket_argument_content"), None)
        text = "" if content is None else (content.text or b"").decode("utf-8", errors="replace")
        # CMake drops one newline right after the opening bracket.
        if text.startswith("\r\n"):
            text = text[2:]
        elif text.startswith("\n"):
            text = text[1:]
        return Arg(text, True, line, bracket=True)
    raw = (inner.text or b"").decode("utf-8", errors="replace")
    if inner.type == "quoted_argument":
        return Arg(raw[1:-1] if len(raw) >= 2 else "", True, line)
    return Arg(raw, False, line)
