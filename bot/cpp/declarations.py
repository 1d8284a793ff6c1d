"""C, C++ and CUDA source facts: the declarations, and the entry points that assemble them
with the preprocessor scan (bot/cpp/preprocessor.py) into `SourceFacts`.

tree-sitter (tree-sitter-cuda for `.cu`/`.cuh`, tree-sitter-cpp otherwise) reads the
declarations. Directive lines are blanked first (line numbers kept): tree-sitter's own `#if`
handling breaks on the `#ifdef __cplusplus` / `extern "C" {` / `#endif` guard that nearly
every C header has, and on constructs split across branches.

A file over `MAX_SOURCE_BYTES` is not read: its facts are empty and say why in `problems`
(a generated 100 MB header is no source anyone reviews, and reading it costs gigabytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser

from bot.cmake.syntax import ParseProblem
from bot.cpp.preprocessor import (
    ConditionalBlock,
    Include,
    MacroDefinition,
    MacroUse,
    Scan,
    _branch_entries,
    scan,
)
from bot.store import memo as cache
from bot.tree import FileTree

try:  # tree-sitter-cuda knows __global__, <<<...>>> and friends; the C++ grammar does not.
    import tree_sitter_cuda
except ImportError:  # pragma: no cover - declared in pyproject; kept optional for slim installs
    tree_sitter_cuda = None

SOURCE_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")
MAX_SOURCE_BYTES = 4 << 20  # the largest file the C++ layer reads


@dataclass(frozen=True, slots=True)
class Declaration:
    """A function (or namespace-scope variable, class, struct) declared or defined.

    `kind` is "function", "variable", "class", "struct", "union" or "enum".
    `conditions` is the `#if` stack at its first line; `extern_c` is C linkage.
    """

    name: str
    qualified_name: str
    line: int
    end_line: int
    is_definition: bool
    extern_c: bool
    conditions: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class ArchRequirement:
    """Lines [line, end_line] compile only for compute capability >= min_arch (e.g. 800)."""

    min_arch: int
    line: int
    end_line: int
    condition: str


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What one C/C++/CUDA file says about its includes, declarations and gates.

    `problems` are preprocessor structure errors (`#endif` without `#if`, ...);
    `unparsed_lines` are where tree-sitter gave up locally (not errors in the file);
    `limits` (also among `problems`) say where the file was not read: over MAX_SOURCE_BYTES,
    scopes nested past MAX_SCOPE_DEPTH.
    """

    path: str
    includes: tuple[Include, ...]
    declarations: tuple[Declaration, ...]
    conditional_blocks: tuple[ConditionalBlock, ...]
    macros_tested: tuple[MacroUse, ...]
    macros_defined: tuple[MacroDefinition, ...]
    arch_requirements: tuple[ArchRequirement, ...]
    problems: tuple[ParseProblem, ...] = ()
    unparsed_lines: tuple[int, ...] = ()
    limits: tuple[ParseProblem, ...] = ()

    def conditions_at(self, line: int) -> tuple[str, ...]:
        """The `#if` stack around `line` (from the conditional blocks)."""
        stack: list[str] = []
        for block in self.conditional_blocks:
            if not block.line < line < block.end_line:
                continue
            for position, start in enumerate(block.branch_lines):
                stop = block.branch_lines[position + 1] if position + 1 < len(block.branch_lines) else block.end_line
                if start < line < stop:
                    stack.extend(_branch_entries(block.branch_conditions, position))
        return tuple(stack)


# ---------------------------------------------------------------------------------------
# Compute capability gates
# ---------------------------------------------------------------------------------------

_ARCH_LOWER_BOUND = re.compile(r"__CUDA_ARCH__\s*(>=|>)\s*(\d+)|(\d+)\s*(<=|<)\s*__CUDA_ARCH__")
_ARCH_UPPER_BOUND = re.compile(r"^!\(\s*__CUDA_ARCH__\s*(<|<=)\s*(\d+)\s*\)$")


def _min_arch(entry: str) -> int | None:
    """The compute capability an `#if` stack entry requires, if it states one."""
    negated = _ARCH_UPPER_BOUND.match(entry)
    if negated:
        bound = int(negated.group(2))
        return bound if negated.group(1) == "<" else bound + 1
    if entry.startswith("!"):
        return None
    best = None
    for match in _ARCH_LOWER_BOUND.finditer(entry):
        if match.group(1):
            value = int(match.group(2)) + (1 if match.group(1) == ">" else 0)
        else:
            value = int(match.group(3)) + (1 if match.group(4) == "<" else 0)
        best = value if best is None else max(best, value)
    return best


def _arch_requirements(blocks: Iterable[ConditionalBlock]) -> list[ArchRequirement]:
    found = []
    for block in blocks:
        conditions = block.branch_conditions
        earlier = None  # the bound the earlier branches' negations state (kept as it grows: linear)
        for position, start in enumerate(block.branch_lines):
            stop = block.branch_lines[position + 1] if position + 1 < len(block.branch_lines) else block.end_line
            own = _min_arch(conditions[position]) if conditions[position] != "#else" else None
            bounds = [b for b in (earlier, own) if b is not None]
            if bounds:
                entries = _branch_entries(conditions, position)
                found.append(ArchRequirement(max(bounds), start, stop, " && ".join(entries)))
            if conditions[position] != "#else":
                negated = _min_arch(f"!({conditions[position]})")
                if negated is not None:
                    earlier = negated if earlier is None else max(earlier, negated)
    return sorted(found, key=lambda r: r.line)


# ---------------------------------------------------------------------------------------
# Declarations (tree-sitter)
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=2)
def _parser(cuda: bool) -> Parser:
    if cuda and tree_sitter_cuda is not None:
        return Parser(Language(tree_sitter_cuda.language()))
    return Parser(Language(tree_sitter_cpp.language()))


_DECLARATOR_WRAPPERS = ("pointer_declarator", "reference_declarator", "attributed_declarator")
_RECORD_KINDS = {
    "class_specifier": "class",
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
}


def _text(node: Node | None) -> str:
    return "" if node is None else (node.text or b"").decode("utf-8", errors="replace")


def _function_declarator(declarator: Node | None) -> Node | None:
    """The function_declarator under pointer/reference wrappers, or None."""
    while declarator is not None and declarator.type in _DECLARATOR_WRAPPERS:
        declarator = declarator.child_by_field_name("declarator")
    if declarator is not None and declarator.type == "function_declarator":
        inner = declarator.child_by_field_name("declarator")
        # `int (*callback)(int)` declares a variable holding a function pointer.
        if inner is not None and inner.type == "parenthesized_declarator":
            return None
        return declarator
    return None


def _declared_name(declarator: Node | None) -> tuple[str, str]:
    """(name, scope written in the declarator) of a (function) declarator."""
    while declarator is not None and declarator.type in (
        *_DECLARATOR_WRAPPERS,
        "function_declarator",
        "init_declarator",
        "array_declarator",
    ):
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return "", ""
    if declarator.type == "qualified_identifier":
        # Error recovery reads `EXPORT_MACRO Type name(...)` as `Type::name` with a missing
        # `::`; the scope is then the return type, not a namespace.
        if any(child.is_missing for child in declarator.children):
            return _text(declarator.child_by_field_name("name")), ""
        name_node = declarator.child_by_field_name("name")
        scope_parts = [_text(declarator.child_by_field_name("scope"))]
        while name_node is not None and name_node.type == "qualified_identifier":
            scope_parts.append(_text(name_node.child_by_field_name("scope")))
            name_node = name_node.child_by_field_name("name")
        return _text(name_node), "::".join(p for p in scope_parts if p)
    return _text(declarator), ""


def _is_extern_c(node: Node) -> bool:
    value = node.child_by_field_name("value")
    return node.type == "linkage_specification" and _text(value).strip('"') == "C"


# Scopes (namespaces, classes, extern "C" blocks, templates) nested in one another that are
# read; ExecuTorch's headers nest five or so. The walk keeps its own stack, and the bound keeps
# the qualified names it builds (one part per level) small.
MAX_SCOPE_DEPTH = 64


@dataclass(frozen=True, slots=True)
class _Container:
    """A node whose children are read as declarations, with what holds inside it."""

    node: Node | _Single  # _Single: one node read as a container's only child
    scope: tuple[str, ...]
    extern_c: bool
    in_record: bool
    depth: int


def _declarations(root: Node, found: Scan, path: str, problems: list[ParseProblem]) -> Iterator[Declaration]:
    """Every declaration under `root` in document order; scopes nested past MAX_SCOPE_DEPTH are
    not read, and the first of them is a problem."""
    conditions = found.conditions_at_line

    def make(
        node: Node,
        name: str,
        scope: tuple[str, ...],
        written_scope: str,
        is_definition: bool,
        extern_c: bool,
        kind: str,
    ) -> Declaration:
        qualified = "::".join(p for p in (*scope, written_scope, name) if p)
        line = node.start_point[0] + 1
        return Declaration(
            name, qualified, line, node.end_point[0] + 1, is_definition, extern_c, conditions(line), kind
        )

    def read(within: _Container) -> list[Declaration | _Container]:
        """What the children of `within` declare, and the containers among them, in order."""
        scope, extern_c, in_record, depth = within.scope, within.extern_c, within.in_record, within.depth + 1
        items: list[Declaration | _Container] = []
        for child in within.node.children:
            kind = child.type
            if kind == "namespace_definition":
                name = _text(child.child_by_field_name("name"))
                body = child.child_by_field_name("body")
                if body is not None:
                    items.append(
                        _Container(body, (*scope, *[p for p in name.split("::") if p]), extern_c, False, depth)
                    )
            elif kind == "linkage_specification":
                body = child.child_by_field_name("body")
                if body is None:
                    continue
                if body.type == "declaration_list":
                    items.append(_Container(body, scope, _is_extern_c(child), in_record, depth))
                elif body.type == "declaration":
                    # `extern "C" int x;` declares, like `extern int x;`.
                    items.extend(declaration(body, scope, _is_extern_c(child), in_record, depth, declares_only=True))
                else:
                    items.append(_Container(_Single(body), scope, _is_extern_c(child), in_record, depth))
            elif kind in (
                "template_declaration",
                "preproc_if",
                "preproc_ifdef",
                "preproc_else",
                "preproc_elif",
                "ERROR",
                "declaration_list",
                "export_declaration",
            ):
                items.append(_Container(child, scope, extern_c, in_record, depth))
            elif kind == "function_definition":
                declarator = child.child_by_field_name("declarator")
                name, written = _declared_name(declarator)
                if name:
                    items.append(make(child, name, scope, written, True, extern_c, "function"))
            elif kind in ("declaration", "field_declaration"):
                items.extend(declaration(child, scope, extern_c, in_record, depth))
            elif kind in _RECORD_KINDS:
                items.extend(record(child, scope, extern_c, depth))
        return items

    def declaration(
        node: Node, scope: tuple[str, ...], extern_c: bool, in_record: bool, depth: int, declares_only: bool = False
    ) -> Iterator[Declaration | _Container]:
        type_node = node.child_by_field_name("type")
        if type_node is not None and type_node.type in _RECORD_KINDS:
            yield from record(type_node, scope, extern_c, depth)
        storage = {_text(c) for c in node.children if c.type == "storage_class_specifier"}
        for declarator in node.children_by_field_name("declarator"):
            name, written = _declared_name(declarator)
            if not name:
                continue
            if _function_declarator(declarator) is not None:
                yield make(node, name, scope, written, False, extern_c, "function")
            elif not in_record:
                # `extern int x;` only declares, unless it has an initializer.
                is_definition = declarator.type == "init_declarator" or ("extern" not in storage and not declares_only)
                yield make(node, name, scope, written, is_definition, extern_c, "variable")

    def record(node: Node, scope: tuple[str, ...], extern_c: bool, depth: int) -> Iterator[Declaration | _Container]:
        name = _text(node.child_by_field_name("name"))
        body = node.child_by_field_name("body")
        if not name or body is None:
            return
        yield make(node, name, scope, "", True, extern_c, _RECORD_KINDS[node.type])
        if node.type != "enum_specifier":
            yield _Container(body, (*scope, name), extern_c, True, depth)

    pending: list[Declaration | _Container] = [_Container(root, (), False, False, 0)]
    while pending:
        item = pending.pop()
        if isinstance(item, Declaration):
            yield item
        elif item.depth <= MAX_SCOPE_DEPTH:
            pending.extend(reversed(read(item)))
        elif not problems:
            line = item.node.start_point[0] + 1 if isinstance(item.node, Node) else 1
            problems.append(
                ParseProblem(
                    path, line, f"scopes nested deeper than {MAX_SCOPE_DEPTH}: the declarations inside are not read"
                )
            )


class _Single:
    """Presents one node as the only child of a container, for `read`."""

    def __init__(self, node: Node) -> None:
        self.children = [node]


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


def source_facts(path: str, source: str | bytes) -> SourceFacts:
    """The facts of one C/C++/CUDA file (empty, with a problem, when it is over the size cap)."""
    if len(source) > MAX_SOURCE_BYTES:
        return too_large(path, len(source))
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    found = scan(path, text)
    tree = _parser(path.endswith(CUDA_SUFFIXES)).parse(found.blanked.encode("utf-8"))
    nesting: list[ParseProblem] = []
    declarations = tuple(_declarations(tree.root_node, found, path, nesting))
    return SourceFacts(
        path=path,
        includes=found.includes,
        declarations=declarations,
        conditional_blocks=found.conditional_blocks,
        macros_tested=found.macros_tested,
        macros_defined=found.macros_defined,
        arch_requirements=tuple(_arch_requirements(found.conditional_blocks)),
        problems=(*found.problems, *nesting),
        unparsed_lines=tuple(sorted(set(_error_lines(tree.root_node)))),
        limits=tuple(nesting),
    )


def too_large(path: str, size: int) -> SourceFacts:
    """The facts of a file the C++ layer does not read: none, and the reason as a problem."""
    problem = ParseProblem(path, 1, f"not read: {size} bytes, over the {MAX_SOURCE_BYTES} bytes the C++ layer reads")
    return SourceFacts(path, (), (), (), (), (), (), problems=(problem,), limits=(problem,))


def _error_lines(node: Node) -> Iterator[int]:
    """First lines of the regions tree-sitter could not parse (export macros, split
    signatures): declarations there may be missing, which is not the file's fault."""
    pending = list(reversed(node.children))  # its own stack: errors can sit thousands of levels deep
    while pending:
        child = pending.pop()
        if child.type == "ERROR" or child.is_missing:
            yield child.start_point[0] + 1
        elif child.has_error:
            pending.extend(reversed(child.children))


def source_facts_cached(blob_id: str | None, path: str, source: str | bytes) -> SourceFacts:
    """`source_facts`, kept in the fact cache by (blob id, path)."""
    if blob_id is None:
        return source_facts(path, source)
    return cache.fact("cpp-source-facts", (blob_id, path), lambda: source_facts(path, source), persist=True)


def source_facts_in_tree(tree: FileTree, path: str) -> SourceFacts | None:
    """The facts of `path` in `tree` (cached by blob), or None when it cannot be read."""
    blob = tree.blob_id(path)
    if blob is not None:
        kept = cache.peek("cpp-source-facts", (blob, path))
        if kept is not None:
            return kept
    data = tree.read(path)
    if data is None:
        return None
    return source_facts_cached(blob, path, data)


def is_source_path(path: str) -> bool:
    """Whether `path` is a C, C++ or CUDA source or header by its suffix."""
    return path.endswith(SOURCE_SUFFIXES)
