"""Span edits of C and C++ source: gate a declaration by moving the `#if` that opens a block.

The declaration is found through tree-sitter (on the source with directive lines blanked, as
`bot/cpp/declarations.py` reads it), with what belongs to it above: its comment, its template
line, attributes written on lines of their own. The `#if` (all of its lines, when continued
with a backslash) moves to stand just above that, so everything from the declaration down to
the old place of the `#if` is gated. Pure: text in, text out.
"""

from __future__ import annotations

from tree_sitter import Node

from bot.cpp.declarations import CUDA_SUFFIXES, _parser
from bot.cpp.preprocessor import scan

# Nodes whose children are declarations in their own right: the file, namespaces, extern "C" { }.
_CONTAINERS = ("translation_unit", "namespace_definition", "linkage_specification", "declaration_list")


def gate_declaration(path: str, text: str, declaration_line: int, opening_line: int) -> str | None:
    """`text` with the `#if`/`#ifdef` opening on `opening_line` moved above the declaration
    that spans `declaration_line`, so that the declaration and everything between it and the
    old place of the `#if` becomes gated.

    None when that edit would cross another directive, leave the declaration's scope (a
    namespace closing in between), or the declaration cannot be read.
    """
    found = scan(path, text)
    block = next((b for b in found.conditional_blocks if b.line == opening_line), None)
    if block is None or block.branch_lines[0] != opening_line:
        return None
    directive_end = block.branch_spans[0][0]  # 0-based first body line = last directive line, 1-based
    root = _parser(path.endswith(CUDA_SUFFIXES)).parse(found.blanked.encode("utf-8")).root_node
    statement = _statement_at(root, declaration_line - 1)
    if statement is None or statement.has_error:
        return None
    container = statement.parent
    if container is None or container.end_point[0] < opening_line - 1:
        return None  # the `#if` is outside the declaration's namespace or extern "C" block
    first_row = _leading_comments_start(statement, text)
    last_row = statement.end_point[0]
    if last_row >= opening_line - 1:
        return None
    lines = text.split("\n")
    blanked = found.blanked.split("\n")
    if any(lines[row].strip() and not blanked[row].strip() for row in range(first_row, opening_line - 1)):
        return None  # a directive in between: moving the `#if` over it would change its nesting
    directive = lines[opening_line - 1 : directive_end]
    del lines[opening_line - 1 : directive_end]
    above, below = opening_line - 2, opening_line - 1
    if above >= 0 and below < len(lines) and not lines[above].strip() and not lines[below].strip():
        del lines[below]  # the `#if` stood between two blank lines: one is enough
    lines[first_row:first_row] = directive
    return "\n".join(lines)


def _statement_at(node: Node, row: int) -> Node | None:
    """The declaration (or definition, template) of a container that spans `row`."""
    container: Node | None = node
    while container is not None:  # a loop, not recursion: namespaces may nest thousands deep
        child = next((c for c in container.children if c.is_named and c.start_point[0] <= row <= c.end_point[0]), None)
        if child is None or child.type == "comment":
            return None
        if child.type not in _CONTAINERS or (child.type == "linkage_specification" and not _has_body(child)):
            return child
        container = child
    return None


def _has_body(node: Node) -> bool:
    return any(child.type == "declaration_list" for child in node.children)


def _leading_comments_start(statement: Node, text: str) -> int:
    """The first row of the comments written directly above `statement`, each on lines of its own."""
    lines = text.split("\n")
    row = statement.start_point[0]
    sibling = statement.prev_sibling
    while (
        sibling is not None
        and sibling.type == "comment"
        and sibling.end_point[0] == row - 1
        and not lines[sibling.start_point[0]][: sibling.start_point[1]].strip()
    ):
        row = sibling.start_point[0]
        sibling = sibling.prev_sibling
    return row
