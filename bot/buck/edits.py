"""Edits to Starlark text at syntax spans, written the way the file already writes things.

Every Buck fix is one of these: insert a keyword argument, add a list element, replace a value,
rename a keyword, move a statement. Each takes the text and what `bot/buck/syntax.py` found in
it and returns the new text; `bot.fixes.fix_between` turns old and new text into a line fix.
The new text follows the file: its indentation, its quote character, `name = value` or
`name=value`, trailing commas where the list or call writes them, sorted lists kept sorted.
Pure: no I/O.
"""

from __future__ import annotations

import itertools
import re

from bot.buck.syntax import Call, Keyword, ListLiteral, Span, Statement

ONE_LINE_LIMIT = 100  # a one-line list that would grow past this is written one element a line


def insert_keyword(
    text: str, call: Call, name: str, value_source: str, *, after: str | None = None, first: bool = False
) -> str:
    """`call` with `name = value_source` added: after the keyword `after` when written, first when
    `first`, else after the last keyword (before any `**splat`, which Starlark wants last)."""
    equals = _equals_style(text, call)
    written = f"{name}{equals}{value_source}"
    keywords = call.keywords
    anchor = None
    if not first and keywords:
        anchor = next((k for k in keywords if k.name == after), None) if after else None
        anchor = anchor or keywords[-1]
    if anchor is None:
        return _insert_first(text, call, written)
    return _insert_after_argument(text, call, anchor.span, written)


def insert_splat(text: str, call: Call, expression: str) -> str:
    """`call` with `**expression` added as its last argument (where Starlark wants it)."""
    if not call.argument_spans:
        return _insert_first(text, call, f"**{expression}")
    # Written without a trailing comma, as build files write a closing splat.
    return _insert_after_argument(text, call, call.argument_spans[-1], f"**{expression}", trailing_comma=False)


def string_literal(text: str, value: str) -> str:
    """`value` as a string literal in the file's quotes."""
    quote = _file_quote(text)
    return f"{quote}{value}{quote}"


def add_list_element(text: str, literal: ListLiteral, value: str) -> str:
    """`literal` with the string `value` added, quoted as the list (or the file) quotes: at its
    sorted place when the list is sorted, at the end otherwise."""
    quote = next((e.quote for e in literal.elements if e.quote), None) or _file_quote(text)
    written = f"{quote}{value}{quote}"
    elements = literal.elements
    position = len(elements)
    values = [e.string for e in elements if e.string is not None]
    if elements and len(values) == len(elements):  # every element a plain string
        order = _sorted_order(values)
        if order is not None:
            position = next((i for i, v in enumerate(values) if order(value) < order(v)), len(elements))
    if not elements:
        return _splice(text, literal.span.start + 1, literal.span.end - 1, written)
    if literal.one_line:
        return _add_to_one_line(text, literal, position, written)
    if position < len(elements):
        target = elements[position]
        if _first_on_line(text, target.span.start):
            start = _line_start(text, target.span.start)
            return _splice(text, start, start, f"{_indent_at(text, target.span.start)}{written},\n")
        return _splice(text, target.span.start, target.span.start, f"{written}, ")
    last = elements[-1]
    indent = _indent_at(text, last.span.start)
    end = min(_line_end(text, last.span.end), literal.span.end - 1)  # before a `]` on the same line
    if literal.trailing_comma:
        return _splice(text, end, end, f"\n{indent}{written},")
    new = _splice(text, end, end, f"\n{indent}{written}")
    return _splice(new, last.span.end, last.span.end, ",")  # the old last element needs its comma now


def remove_list_element(text: str, literal: ListLiteral, index: int) -> str:
    """`literal` without its element `index`: its line goes where it stood alone on one."""
    elements = literal.elements
    element = elements[index]
    last = index == len(elements) - 1
    line_start, line_end = _line_start(text, element.span.start), _line_end(text, element.span.end)
    after = text[element.span.end : line_end]
    alone = _first_on_line(text, element.span.start) and re.fullmatch(r"\s*,?\s*(#.*)?", after) is not None
    if alone and not (last and not literal.trailing_comma and index > 0):
        return text[:line_start] + text[min(len(text), line_end + 1) :]
    if not last:
        return _splice(text, element.span.start, elements[index + 1].span.start if not alone else line_end + 1, "")
    if index > 0:  # the last one: the comma before it goes with it, a trailing comma stays
        return _splice(text, elements[index - 1].span.end, element.span.end, "")
    return _splice(text, element.span.start, element.span.end, "")


def replace_value(text: str, keyword: Keyword, value_source: str) -> str:
    """`keyword`'s value replaced by `value_source`."""
    return _splice(text, keyword.value_span.start, keyword.value_span.end, value_source)


def rename_keyword(text: str, keyword: Keyword, new_name: str) -> str:
    """`keyword` renamed, its value untouched."""
    return _splice(text, keyword.name_span.start, keyword.name_span.end, new_name)


def replace_callee(text: str, call: Call, callee: str) -> str:
    """`call` calling `callee` instead, its arguments untouched."""
    callee_end = call.span.start + len(text[call.span.start : call.arguments.start].rstrip())
    return _splice(text, call.span.start, callee_end, callee)


def move_statement(text: str, statement: Statement, *, before: Statement) -> str:
    """`statement` taken out of its lines and put above `before`, at `before`'s indentation."""
    start, end = _line_start(text, statement.span.start), _line_end(text, statement.span.end)
    end = min(len(text), end + 1)  # its newline goes with it
    old_indent = _indent_at(text, statement.span.start)
    new_indent = _indent_at(text, before.span.start)
    lines = text[start:end].splitlines(keepends=True)
    moved = "".join(
        new_indent + line[len(old_indent) :] if line.startswith(old_indent) and line.strip() else line for line in lines
    )
    if not moved.endswith("\n"):
        moved += "\n"
    target = _line_start(text, before.span.start)
    if target >= end:
        return text[:start] + text[end:target] + moved + text[target:]
    return text[:target] + moved + text[target:start] + text[end:]


# -- the file's ways of writing ------------------------------------------------------------------


def _equals_style(text: str, call: Call) -> str:
    """` = ` or `=`, as the call (or else the file) writes keyword arguments."""
    for keyword in call.keywords:
        return text[keyword.name_span.end : keyword.value_span.start]
    return " = " if re.search(r"\w \= ", text) or not re.search(r"\w=\S", text) else "="


def _file_quote(text: str) -> str:
    double, single = len(re.findall(r'(?<![\w"])"', text)), len(re.findall(r"(?<![\w'])'", text))
    return "'" if single > double else '"'


def _label_order(value: str) -> tuple[int, str]:
    """buildifier's order of labels in a list: `:local` first, then `//absolute`, then `@cell`."""
    phase = 0 if value.startswith(":") else 1 if value.startswith("//") else 2 if value.startswith("@") else 0
    return phase, value


def _sorted_order(values: list[str]):
    """The order the list is sorted by (plain, or buildifier's label order), or None."""
    for order in (lambda v: v, _label_order):
        keys = [order(v) for v in values]
        if all(a <= b for a, b in itertools.pairwise(keys)):
            return order
    return None


def _add_to_one_line(text: str, literal: ListLiteral, position: int, written: str) -> str:
    elements = literal.elements
    if position < len(elements):
        new = _splice(text, elements[position].span.start, elements[position].span.start, f"{written}, ")
    else:
        new = _splice(text, elements[-1].span.end, elements[-1].span.end, f", {written}")
    line_start = _line_start(new, literal.span.start)
    grown = _line_end(new, literal.span.start) - line_start
    if grown <= ONE_LINE_LIMIT:
        return new
    # Too long for one line: one element a line, as buildifier writes a long list.
    indent = _indent_at(text, literal.span.start)
    items = [e.text for e in elements]
    items.insert(position, written)
    body = "".join(f"{indent}    {item},\n" for item in items)
    return _splice(text, literal.span.start, literal.span.end, f"[\n{body}{indent}]")


def _insert_after_argument(
    text: str, call: Call, anchor: Span, written: str, trailing_comma: bool | None = None
) -> str:
    after = anchor.end
    comma = re.match(r"[ \t]*,", text[after:])
    if call.span.line == call.span.end_line:  # a one-line call stays one line
        at = after + comma.end() if comma else after
        return _splice(text, at, at, f" {written},") if comma else _splice(text, at, at, f", {written}")
    indent = _argument_indent(text, call, anchor)
    rest_start = after + comma.end() if comma else after
    rest_of_line = text[rest_start : _line_end(text, rest_start)]
    if rest_of_line.strip() and not rest_of_line.strip().startswith("#"):
        # More arguments, or the closing parenthesis, follow on the line: insert there.
        return _splice(text, rest_start, rest_start, f" {written}," if comma else f", {written}")
    end = _line_end(text, after)
    closing_follows = text[end:].lstrip().startswith(")")
    if trailing_comma is None:  # as the call writes its last argument
        trailing_comma = bool(comma) or not closing_follows
    new = _splice(text, end, end, f"\n{indent}{written}" + ("," if trailing_comma or not closing_follows else ""))
    return new if comma else _splice(new, after, after, ",")


def _insert_first(text: str, call: Call, written: str) -> str:
    opening = call.arguments.start + 1
    if not call.argument_spans:
        return _splice(text, opening, opening, written)
    first = call.argument_spans[0]
    if first.line == call.arguments.line:  # the arguments start on the parenthesis' line
        return _splice(text, first.start, first.start, f"{written}, ")
    end = _line_end(text, opening)  # after a comment on the parenthesis' line, if any
    return _splice(text, end, end, f"\n{_indent_at(text, first.start)}{written},")


def _argument_indent(text: str, call: Call, anchor: Span) -> str:
    if _first_on_line(text, anchor.start):
        return _indent_at(text, anchor.start)
    for argument in call.argument_spans:
        if _first_on_line(text, argument.start):
            return _indent_at(text, argument.start)
    return " " * (anchor.column - 1)


# -- text positions ----------------------------------------------------------------------------


def _splice(text: str, start: int, end: int, insertion: str) -> str:
    return text[:start] + insertion + text[end:]


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def _first_on_line(text: str, offset: int) -> bool:
    return not text[_line_start(text, offset) : offset].strip()


def _indent_at(text: str, offset: int) -> str:
    line = text[_line_start(text, offset) : _line_end(text, offset)]
    return line[: len(line) - len(line.lstrip())]
