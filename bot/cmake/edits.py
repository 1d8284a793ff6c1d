"""Span edits of CMake source: find a command invocation and its arguments, move items to a scope.

A fix to CMake is an edit of the text a maintainer would have written: the scope keyword
changed in place, or, when only some items of a group must move, the group split where they
stand (link order is the order items are written, so they are not reordered), with the file's
indentation and line breaks kept. Arguments are found through tree-sitter-cmake
(`bot/cmake/syntax.py`), never by matching words on lines. Offsets are bytes of the UTF-8
text. Pure: text in, text out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from bot.cmake.syntax import syntax_tree

# The keywords of target_* commands, and what each means (the LINK_ ones are the legacy
# signature of target_link_libraries; a call keeps the family it is written in).
SCOPES = {
    "PUBLIC": "PUBLIC",
    "PRIVATE": "PRIVATE",
    "INTERFACE": "INTERFACE",
    "LINK_PUBLIC": "PUBLIC",
    "LINK_PRIVATE": "PRIVATE",
    "LINK_INTERFACE_LIBRARIES": "INTERFACE",
}
_LEGACY = {"PUBLIC": "LINK_PUBLIC", "PRIVATE": "LINK_PRIVATE", "INTERFACE": "LINK_INTERFACE_LIBRARIES"}


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument as written: `text` with its quotes, `value` without, and its byte span."""

    text: str
    value: str
    start: int
    end: int
    line: int  # 1-based
    column: int  # 0-based, in bytes

    @property
    def is_scope(self) -> bool:
        """Whether this is a scope keyword (an unquoted PUBLIC, PRIVATE, INTERFACE, LINK_...)."""
        return self.text in SCOPES


@dataclass(frozen=True, slots=True)
class Invocation:
    """One command invocation: its lower-cased name, arguments and the lines it spans."""

    name: str
    arguments: tuple[Argument, ...]
    line: int
    end_line: int
    # Every node inside the parentheses (arguments and comments) as (start, end) byte spans,
    # so an edit knows what stands before an argument on its line.
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class ScopeGroup:
    """The items of a target_* command that follow one scope keyword (None: no keyword)."""

    keyword: Argument | None
    items: tuple[Argument, ...]

    @property
    def scope(self) -> str | None:
        """PUBLIC, PRIVATE or INTERFACE (legacy keywords mapped), None without a keyword."""
        return None if self.keyword is None else SCOPES[self.keyword.text]


def invocations(text: str) -> tuple[Invocation, ...]:
    """Every command invocation of a CMake file, in order."""
    data = text.encode("utf-8")
    found: list[Invocation] = []
    _collect(syntax_tree(data).root_node, found)
    return tuple(found)


def invocation_at(text: str, line: int, names: Iterable[str] = ()) -> Invocation | None:
    """The invocation whose lines include `line` (one of `names` when given)."""
    wanted = {n.lower() for n in names}
    for invocation in invocations(text):
        if invocation.line <= line <= invocation.end_line and (not wanted or invocation.name in wanted):
            return invocation
    return None


def scope_groups(invocation: Invocation) -> tuple[ScopeGroup, ...]:
    """The scope groups of a target_* invocation (its first argument is the target)."""
    groups: list[ScopeGroup] = []
    keyword: Argument | None = None
    items: list[Argument] = []
    for argument in invocation.arguments[1:]:
        if argument.is_scope:
            if keyword is not None or items:
                groups.append(ScopeGroup(keyword, tuple(items)))
            keyword, items = argument, []
        else:
            items.append(argument)
    if keyword is not None or items:
        groups.append(ScopeGroup(keyword, tuple(items)))
    return tuple(groups)


def set_scope(text: str, invocation: Invocation, items: Sequence[Argument], scope: str) -> str | None:
    """`text` with `items` (a run of adjacent items of one keyword group) under `scope`.

    When the run is the whole group its keyword is rewritten; otherwise the group is split
    around the run, the items before and after it keeping the old keyword. A run that comes to
    stand next to a group already in `scope` joins it rather than repeating its keyword.
    Continuation lines aligned under a group's first item are realigned to the new keyword's
    width. None when the items are not such a run (or belong to a group written without a
    keyword).
    """
    if scope not in _LEGACY:
        raise ValueError(f"not a scope: {scope!r}")
    groups = scope_groups(invocation)
    index = next((i for i, g in enumerate(groups) if items and items[0] in g.items), None)
    if index is None:
        return None
    group = groups[index]
    keyword = group.keyword
    if keyword is None:
        return None
    first = group.items.index(items[0])
    last = first + len(items)
    if tuple(group.items[first:last]) != tuple(items):
        return None
    if group.scope == scope:
        return text
    old = keyword.text
    new = _LEGACY[scope] if old.startswith("LINK_") else scope
    data = text.encode("utf-8")
    layout = _Layout.of(data, invocation, group)
    previous = groups[index - 1] if index > 0 and groups[index - 1].keyword is not None else None
    following = groups[index + 1] if index + 1 < len(groups) else None
    edits: list[tuple[int, int, bytes]] | None = None
    run_column = None  # where the run's items align once under `new` (None: lines of their own)
    if first == 0 and previous is not None and previous.keyword is not None and previous.keyword.text == new:
        run_column = _Layout.of(data, invocation, previous).item_column
        edits = layout.drop_keyword(run_column, items[-1].end)
    if edits is None and first == 0:
        edits = [(keyword.start, keyword.end, new.encode())]
        if layout.item_column is not None:
            run_column = layout.item_column + len(new) - len(old)
            edits += _realign(data, items[0].end, items[-1].end, layout.item_column, run_column)
    elif edits is None:
        edits = layout.open_scope(items[0], new, items[-1].end)
        run_column = layout.opened_column(new)
    if last < len(group.items):
        edits += layout.open_scope(group.items[last], old, group.items[-1].end)
    elif following is not None and following.keyword is not None and following.keyword.text == new and following.items:
        merged = _Layout.of(data, invocation, following).drop_keyword(run_column, following.items[-1].end)
        edits += merged or []
    return _replace(data, edits)


def _replace(data: bytes, edits: list[tuple[int, int, bytes]]) -> str | None:
    """`data` with each (start, end) span replaced, last first; None if two spans overlap."""
    ordered = sorted(edits)
    if any(earlier[1] > later[0] for earlier, later in itertools.pairwise(ordered)):
        return None
    for start, end, replacement in reversed(ordered):
        data = data[:start] + replacement + data[end:]
    return data.decode("utf-8")


@dataclass(frozen=True, slots=True)
class _Layout:
    """How a group is laid out: where its keyword stands and where its items align."""

    data: bytes
    invocation: Invocation
    group: ScopeGroup
    keyword: Argument
    keyword_indent: bytes  # what goes before a keyword written on a line of its own
    item_column: int | None  # column of the first item when it shares the keyword's line

    @classmethod
    def of(cls, data: bytes, invocation: Invocation, group: ScopeGroup) -> _Layout:
        keyword = group.keyword
        assert keyword is not None
        line_start = _line_start(data, keyword.start)
        before = data[line_start : keyword.start]
        indent = before if not before.strip() else b" " * keyword.column
        first = group.items[0] if group.items else None
        column = first.column if first is not None and first.line == keyword.line else None
        return cls(data, invocation, group, keyword, indent, column)

    def opened_column(self, keyword: str) -> int | None:
        """The column items take after `open_scope` writes `keyword` (None: lines of their own)."""
        return None if self.item_column is None else len(self.keyword_indent) + len(keyword) + 1

    def drop_keyword(self, column: int | None, group_end: int) -> list[tuple[int, int, bytes]] | None:
        """Edits that remove this group's keyword, its items joining the group before it and
        aligning at `column`. None where that cannot be written cleanly."""
        keyword = self.keyword
        line_start = _line_start(self.data, keyword.start)
        if self.invocation.line == self.invocation.end_line or self.data[line_start : keyword.start].strip():
            previous_end = max((end for start, end in self.invocation.spans if end <= keyword.start), default=None)
            return None if previous_end is None else [(previous_end, keyword.end, b"")]
        if self.item_column is None:  # the keyword alone on its line: the line goes
            line_end = self.data.find(b"\n", keyword.end)
            if line_end < 0 or self.data[keyword.end : line_end].strip() or column is not None:
                return None
            return [(line_start, line_end + 1, b"")]
        if column is None:
            return None
        first = self.group.items[0]
        return [
            (line_start, first.start, b" " * column),
            *_realign(self.data, first.end, group_end, self.item_column, column),
        ]

    def open_scope(self, item: Argument, keyword: str, group_end: int) -> list[tuple[int, int, bytes]]:
        """Edits that start `keyword` at `item` (the items up to `group_end` follow it)."""
        word = keyword.encode()
        if self.invocation.line == self.invocation.end_line:  # a one-line call stays one line
            return [(item.start, item.start, word + b" ")]
        previous_end = max((end for start, end in self.invocation.spans if end <= item.start), default=item.start)
        line_start = _line_start(self.data, item.start)
        first_on_line = previous_end < line_start
        if self.item_column is None:  # keywords on lines of their own: add one above the item
            if first_on_line:
                return [(line_start, line_start, self.keyword_indent + word + b"\n")]
            item_indent = self.data[line_start : line_start + _indent_width(self.data, line_start)]
            return [(previous_end, item.start, b"\n" + self.keyword_indent + word + b"\n" + item_indent)]
        column = len(self.keyword_indent) + len(word) + 1
        start = line_start if first_on_line else previous_end
        opening = (b"" if first_on_line else b"\n") + self.keyword_indent + word + b" "
        return [(start, item.start, opening), *_realign(self.data, item.end, group_end, self.item_column, column)]


def _realign(data: bytes, after: int, end: int, old_column: int, new_column: int) -> list[tuple[int, int, bytes]]:
    """Re-indent the lines starting in (after, end] that were indented to `old_column`."""
    edits = []
    position = data.find(b"\n", after)
    while 0 <= position < end:
        line_start = position + 1
        width = _indent_width(data, line_start)
        if width == old_column and data[line_start : line_start + width] == b" " * width and line_start + width <= end:
            edits.append((line_start, line_start + width, b" " * new_column))
        position = data.find(b"\n", line_start)
    return [] if old_column == new_column else edits


def _line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1


def _indent_width(data: bytes, line_start: int) -> int:
    width = 0
    while line_start + width < len(data) and data[line_start + width] in b" \t":
        width += 1
    return width


def _collect(root: Node, found: list[Invocation]) -> None:
    # An explicit stack: blocks nest one tree level each, as deep as a pull request writes them.
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "normal_command":
            found.append(_invocation(node))
        else:
            pending.extend(reversed(node.children))


def _invocation(node: Node) -> Invocation:
    name = ""
    arguments: list[Argument] = []
    spans: list[tuple[int, int]] = []
    for child in node.children:
        if child.type == "identifier":
            name = (child.text or b"").decode("utf-8", errors="replace").lower()
        elif child.type == "argument_list":
            for part in child.children:
                spans.append((part.start_byte, part.end_byte))
                if part.type != "argument":
                    continue
                text = (part.text or b"").decode("utf-8", errors="replace")
                # `-DX="a b"` is one argument to CMake; the grammar splits it where the quote starts.
                if arguments and arguments[-1].end == part.start_byte and not arguments[-1].text.startswith(('"', "[")):
                    joined = arguments[-1]
                    arguments[-1] = Argument(
                        joined.text + text, joined.value + text, joined.start, part.end_byte, joined.line, joined.column
                    )
                    continue
                inner = part.children[0] if part.children else part
                value = text[1:-1] if inner.type == "quoted_argument" and len(text) >= 2 else text
                arguments.append(
                    Argument(text, value, part.start_byte, part.end_byte, part.start_point[0] + 1, part.start_point[1])
                )
    return Invocation(name, tuple(arguments), node.start_point[0] + 1, node.end_point[0] + 1, tuple(spans))
