"""Starlark source -> where things are written: rule calls, keyword arguments, list elements,
statements, comments and every syntax error, parsed with tree-sitter-python.

tree-sitter recovers from errors, so a broken file still has its other calls indexed and every
error located, where the interpreter stops at the first. The interpreter (starlark-pyo3, the one
that evaluates: `bot/buck/evaluation.py`) stays the authority on whether a file parses at all:
Python is a superset of Starlark's syntax, so errors are reported only for files it rejects, and
its own first error is never lost. Checks meet evaluation by line: a target's `line` is the
first line of its call (`call_at`). Pure: no I/O.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_python
from tree_sitter import Language, Node, Parser

from bot.buck.syntax_errors import (
    SyntaxProblem,
    interpreter_error,
    merged_errors,
    root_errors,
)


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of the text: character offsets [start, end) and 1-based line and column."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Element:
    """One element of a list literal, as written; `string` is its value when a plain string."""

    span: Span
    text: str
    string: str | None
    quote: str | None  # the quote character of a string element


@dataclass(frozen=True, slots=True)
class ListLiteral:
    """A `[...]` literal: its elements in order, and whether a comma follows the last one."""

    span: Span
    elements: tuple[Element, ...]
    trailing_comma: bool

    @property
    def one_line(self) -> bool:
        return self.span.line == self.span.end_line


@dataclass(frozen=True, slots=True)
class Keyword:
    """`name = value` in a call; `value_list` is the value when it is a list literal."""

    name: str
    span: Span
    name_span: Span
    value_span: Span
    value_list: ListLiteral | None


@dataclass(frozen=True, slots=True)
class Call:
    """A call as written: `callee(...)` with its keyword arguments and `**splats` in order."""

    callee: str  # dotted as written: `cxx_library`, `runtime.cxx_library`
    span: Span  # from the callee to the closing parenthesis
    arguments: Span  # from `(` to `)`
    keywords: tuple[Keyword, ...]
    splats: tuple[str, ...]  # the expressions splatted with `**`, as written
    argument_spans: tuple[Span, ...]  # every argument in order: positional, keyword, splat
    statement: Span  # the whole statement the call is part of

    @property
    def line(self) -> int:
        """The call-site line the evaluator records on a target (`BuckTarget.line`)."""
        return self.span.line

    def keyword(self, name: str) -> Keyword | None:
        """The keyword argument `name`, if written in this call."""
        return next((k for k in self.keywords if k.name == name), None)


@dataclass(frozen=True, slots=True)
class Statement:
    """A statement of the module or of a block, with the tree-sitter kind it has."""

    span: Span
    kind: str
    depth: int  # 0 at module level, 1 in a function body, ...


@dataclass(frozen=True, slots=True)
class Comment:
    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class StarlarkSyntax:
    """Everything `parse_starlark` found in one file, in document order."""

    errors: tuple[SyntaxProblem, ...]
    calls: tuple[Call, ...]
    lists: tuple[ListLiteral, ...]
    statements: tuple[Statement, ...]
    comments: tuple[Comment, ...]
    recovered: tuple[SyntaxProblem, ...]  # tree-sitter's own errors, whatever the interpreter says
    refused: str = ""  # why the file was not parsed at all (nothing above is known then)

    @property
    def parses(self) -> bool:
        return not self.errors

    def call_at(self, line: int) -> Call | None:
        """The outermost call whose first line is `line`: where evaluation says a target is defined."""
        return next((call for call in self.calls if call.line == line), None)

    def statement_at(self, line: int) -> Statement | None:
        """The innermost statement that starts on `line`."""
        found = [s for s in self.statements if s.span.line == line]
        return max(found, key=lambda s: s.depth) if found else None


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_python.language()))


def syntax_of(text: str) -> StarlarkSyntax:
    """`parse_starlark`, kept in the fact cache (bot/store/memo.py) by the text's digest.

    Stored too: a warm review asks for the call sites of targets in dozens of build files, and
    reading an index back costs about a twentieth of parsing the file again."""
    from bot.store import memo as cache

    return cache.fact("buck-syntax", (cache.digest(text),), lambda: parse_starlark(text), persist=True)


def parse_starlark(text: str) -> StarlarkSyntax:
    """Index a Starlark file and locate every syntax error in it."""
    depth, deepest_line = bracket_depth(text)
    if depth > MAX_BRACKET_DEPTH:
        # The interpreter's parser recurses per bracket: such a file is refused, not parsed, as
        # the evaluator refuses it (a limit, reported by `buck-eval-error`, not a syntax error).
        return StarlarkSyntax((), (), (), (), (), (), refused=f"brackets nested {depth} deep on line {deepest_line}")
    data = text.encode("utf-8")
    root = _parser().parse(data).root_node
    index = _Index(text, data)
    calls: list[Call] = []
    lists: list[ListLiteral] = []
    statements: list[Statement] = []
    comments: list[Comment] = []
    recovered: list[SyntaxProblem] = []
    python_only: list[SyntaxProblem] = []
    _walk(root, index, calls, lists, statements, comments, recovered, python_only)
    first = interpreter_error(text)
    if first is None:
        errors: tuple[SyntaxProblem, ...] = ()
    elif first.line == 0:
        errors = merged_errors(first, recovered + python_only, len(text.splitlines()))
    else:
        errors = root_errors(text, first, recovered + python_only)
    return StarlarkSyntax(errors, tuple(calls), tuple(lists), tuple(statements), tuple(comments), tuple(recovered))


@lru_cache(maxsize=256)
def call_end_lines(text: str) -> dict[int, int]:
    """First line of each call -> the line of its closing parenthesis (the outermost call, where
    several start on one line). The evaluator asks this for every target it records, so it is
    one tree-sitter pass per file, without the interpreter's check or the index `parse_starlark`
    builds. A caller must not mutate the result (it is shared through the cache)."""
    ends: dict[int, int] = {}
    pending = [_parser().parse(text.encode("utf-8")).root_node]
    while pending:
        node = pending.pop()
        if node.type == "call":
            start, end = node.start_point[0] + 1, node.end_point[0] + 1
            ends.setdefault(start, end)  # document order, outer before inner: the outermost wins
        pending.extend(reversed(node.children))
    return ends


class _Index:
    """Byte offsets (tree-sitter's) to character offsets, lines and columns (ours)."""

    def __init__(self, text: str, data: bytes) -> None:
        self.text = text
        self._ascii = len(text) == len(data)
        self._data = data
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def char(self, byte: int) -> int:
        return byte if self._ascii else len(self._data[:byte].decode("utf-8", errors="replace"))

    def span(self, node: Node) -> Span:
        return self.span_of(self.char(node.start_byte), self.char(node.end_byte))

    def span_of(self, start: int, end: int) -> Span:
        line = bisect.bisect_right(self._line_starts, start)
        end_line = bisect.bisect_right(self._line_starts, end)
        return Span(
            start,
            end,
            line,
            start - self._line_starts[line - 1] + 1,
            end_line,
            end - self._line_starts[end_line - 1] + 1,
        )

    def source(self, node: Node) -> str:
        span = self.span(node)
        return self.text[span.start : span.end]


_RESERVED = frozenset(
    [
        "as",
        "assert",
        "async",
        "await",
        "class",
        "del",
        "except",
        "finally",
        "from",
        "global",
        "import",
        "is",
        "nonlocal",
        "raise",
        "try",
        "while",
        "with",
        "yield",
    ]
)
_CLOSERS = {
    "list": "]",
    "argument_list": ")",
    "dictionary": "}",
    "parenthesized_expression": ")",
    "tuple": ")",
    "set": "}",
}
_STATEMENT_PARENTS = frozenset({"module", "block"})


def _walk(root, index, calls, lists, statements, comments, recovered, python_only) -> None:
    """Visit every node in document order (iteratively: a long `a + a + ...` nests deeply)."""
    # `node.parent` walks down from the root in tree-sitter: the parent's kind travels with the node.
    pending: list[tuple[Node, str, Node | None, int]] = [(root, "", None, 0)]
    while pending:
        node, parent_kind, statement, depth = pending.pop()
        kind = node.type
        if node.is_missing:
            span = index.span(node)
            recovered.append(SyntaxProblem(span.line, span.column, f"expected `{kind}`"))
            continue
        if kind == "comment":
            comments.append(Comment(index.span(node), index.source(node)))
            continue
        problem = _error_problem(node, parent_kind, index) if kind == "ERROR" else None
        if problem is not None:
            recovered.append(problem)
        else:
            problem = _python_only(node, index)
            if problem is not None:
                python_only.append(problem)
        if parent_kind in _STATEMENT_PARENTS and node.is_named and kind != "ERROR":
            statements.append(Statement(index.span(node), kind, depth))
            statement = node
        if kind == "call":
            call = _call(node, index, statement)
            if call is not None:
                calls.append(call)
        elif kind == "list":
            lists.append(_list(node, index))
        inner = depth + 1 if kind == "block" else depth
        pending.extend((child, kind, statement, inner) for child in reversed(node.children))


def _python_only(node: Node, index: _Index) -> SyntaxProblem | None:
    """Python that tree-sitter accepts and Starlark does not."""
    kind = node.type
    span = index.span(node)
    if not node.is_named and kind in _RESERVED:
        return SyntaxProblem(span.line, span.column, f"cannot use reserved keyword `{kind}`")
    if not node.is_named and kind == "@":
        return SyntaxProblem(span.line, span.column, "invalid input `@`")
    if kind == "concatenated_string" and node.named_child_count > 1:
        second = node.named_children[1]
        where = index.span(second)
        return SyntaxProblem(
            where.line, where.column, f"unexpected string literal `{index.source(second)}`, expected `,`"
        )
    if kind == "string_start" and re.search(r"[fFbB]", index.source(node)):
        return SyntaxProblem(span.line, span.column, f"a `{index.source(node)}` string is not Starlark")
    return None


def _error_problem(node: Node, parent_kind: str, index: _Index) -> SyntaxProblem:
    """An ERROR node: the first token tree-sitter could not place, and what would close its bracket."""
    leaf = node
    while leaf.child_count:
        leaf = leaf.children[0]
    span = index.span(leaf)
    token = index.source(leaf).splitlines()[0] if index.source(leaf).strip() else leaf.type
    before, after = node.prev_sibling, node.next_sibling
    if index.source(node).strip() == "=" and before is not None and after is not None and after.type in (",", ")"):
        return SyntaxProblem(span.line, span.column, f"`{index.source(before)} =` has no value")
    unclosed = _unclosed_bracket(node)
    if unclosed is not None:
        where = index.span(unclosed)
        return SyntaxProblem(
            where.line, where.column, f"`{unclosed.type}` is never closed, expected `{_PAIRS[unclosed.type]}`"
        )
    closer = _CLOSERS.get(parent_kind)
    expected = f", expected `,` or `{closer}`" if closer else ""
    return SyntaxProblem(span.line, span.column, f"unexpected `{token}`{expected}")


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _unclosed_bracket(node: Node) -> Node | None:
    """The first opening bracket among an ERROR's tokens that nothing there closes."""
    opened: list[Node] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if current.child_count:
            pending.extend(reversed(current.children))
        elif current.type in _PAIRS:
            opened.append(current)
        elif opened and current.type == _PAIRS[opened[-1].type]:
            opened.pop()
    return opened[0] if opened else None


def _call(node: Node, index: _Index, statement: Node | None) -> Call | None:
    function, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if function is None or arguments is None or arguments.type != "argument_list":
        return None
    keywords, splats = [], []
    spans = tuple(index.span(a) for a in arguments.named_children if a.type not in ("comment", "ERROR"))
    for argument in arguments.named_children:
        if argument.type == "keyword_argument":
            name, value = argument.child_by_field_name("name"), argument.child_by_field_name("value")
            if name is None or value is None:
                continue
            keywords.append(
                Keyword(
                    index.source(name),
                    index.span(argument),
                    index.span(name),
                    index.span(value),
                    _list(value, index) if value.type == "list" else None,
                )
            )
        elif argument.type == "dictionary_splat":
            splats.append(index.source(argument)[2:].strip())
    whole = statement if statement is not None else node
    return Call(
        re.sub(r"\s+", "", index.source(function)),
        index.span(node),
        index.span(arguments),
        tuple(keywords),
        tuple(splats),
        spans,
        index.span(whole),
    )


def _list(node: Node, index: _Index) -> ListLiteral:
    elements = []
    trailing_comma = False
    for child in node.children:
        if child.type in ("[", "]", "comment", "ERROR") or child.is_missing:
            continue
        if child.type == ",":
            trailing_comma = True
            continue
        trailing_comma = False
        string = quote = None
        if child.type == "string" and not any(c.type == "interpolation" for c in child.children):
            start = next((c for c in child.children if c.type == "string_start"), None)
            prefix = index.source(start) if start is not None else ""
            if prefix in ('"', "'"):
                quote = prefix
                content = [c for c in child.children if c.type not in ("string_start", "string_end")]
                if all(c.type == "string_content" for c in content):
                    string = "".join(index.source(c) for c in content)
        elements.append(Element(index.span(child), index.source(child), string, quote))
    return ListLiteral(index.span(node), tuple(elements), trailing_comma)


MAX_BRACKET_DEPTH = 200  # real build files stay under 10


@lru_cache(maxsize=64)
def _lines_of(text: str) -> tuple[str, ...]:
    """A build file's lines, split once for all the targets it defines."""
    return tuple(text.splitlines())


@lru_cache(maxsize=1024)
def bracket_depth(text: str) -> tuple[int, int]:
    """The deepest nesting of (), [] and {} outside strings and comments, and its line: linear."""
    depth = deepest = 0
    deepest_line = line = 1
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == "\n":
            line += 1
        elif char == "#":
            end = text.find("\n", index)
            index = length if end < 0 else end
            continue
        elif char in "\"'":
            quote = text[index : index + 3] if text[index : index + 3] in ('"""', "'''") else char
            end = index + len(quote)
            while end < length and not text.startswith(quote, end):
                if text[end] == "\\":
                    end += 1
                elif text[end] == "\n":
                    line += 1
                    if len(quote) == 1:
                        break  # an unterminated string: the parser will say so
                end += 1
            index = end + len(quote)
            continue
        elif char in "([{":
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
        elif char in ")]}":
            depth = max(0, depth - 1)
        index += 1
    return deepest, deepest_line


def call_end_line(text: str, line: int) -> int:
    """The line where the call starting on `line` closes its parenthesis.

    From tree-sitter's one pass over the file (`call_end_lines`); the bracket scan below is kept
    for a line where tree-sitter sees no call start (a file it cannot make sense of)."""
    end = call_end_lines(text).get(line)
    if end is not None:
        return end
    lines = _lines_of(text)
    depth, started, quote = 0, False, ""
    for number in range(line - 1, len(lines)):
        row = lines[number]
        i = 0
        while i < len(row):
            char = row[i]
            if quote:
                if char == "\\":
                    i += 1
                elif row.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
            elif char == "#":
                break
            elif row.startswith('"""', i) or row.startswith("'''", i):
                quote = row[i : i + 3]
                i += 2
            elif char in "\"'":
                quote = char
            elif char in "([{":
                depth += 1
                started = True
            elif char in ")]}":
                depth -= 1
                if started and depth == 0:
                    return number + 1
            i += 1
        if quote in ('"', "'"):
            quote = ""
    return line
