"""C, C++ and CUDA source facts: includes, declarations and the `#if` conditions around them.

Two passes, each doing what it is good at:
- a line-based preprocessor scan gives the `#if`/`#elif`/`#else` condition stack of every
  line, the includes, the macros tested and defined, and the conditional blocks. It does
  not care whether the code between directives is well-formed.
- tree-sitter (tree-sitter-cuda for `.cu`/`.cuh`, tree-sitter-cpp otherwise) reads the
  declarations. Directive lines are blanked first (line numbers kept): tree-sitter's own
  `#if` handling breaks on the `#ifdef __cplusplus` / `extern "C" {` / `#endif` guard that
  nearly every C header has, and on constructs split across branches.

`evaluate_condition` decides an `#if` expression against a set of defines (a target's
`-D` flags), so that "is this include active for this target" has an answer.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator, Mapping

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser

from bot.cmake.syntax import ParseProblem
from bot.tree import FileTree

try:  # tree-sitter-cuda knows __global__, <<<...>>> and friends; the C++ grammar does not.
    import tree_sitter_cuda
except ImportError:  # pragma: no cover - declared in pyproject; kept optional for slim installs
    tree_sitter_cuda = None

SOURCE_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")


@dataclass(frozen=True, slots=True)
class Include:
    """`#include <target_text>` (system) or `"target_text"`, under `conditions`."""

    target_text: str
    line: int
    system: bool
    conditions: tuple[str, ...]


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
class ConditionalBlock:
    """One `#if ... #endif` group.

    `condition` is the opening test as an expression (`defined(X)` for `#ifdef X`);
    `branch_conditions`, `branch_lines` and `branch_texts` describe each branch in order
    (`#if`, `#elif`..., `#else`), the texts being the branch's source lines.
    """

    condition: str
    line: int
    else_line: int | None
    end_line: int
    branch_texts: tuple[str, ...]
    branch_conditions: tuple[str, ...]
    branch_lines: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MacroUse:
    """A macro tested by `#if`/`#ifdef`/`#elif`."""

    name: str
    line: int


@dataclass(frozen=True, slots=True)
class MacroDefinition:
    """`#define name value`; `parameters` is None for an object-like macro."""

    name: str
    value: str
    line: int
    parameters: tuple[str, ...] | None = None


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
    `unparsed_lines` are where tree-sitter gave up locally (not errors in the file).
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
# The preprocessor scan
# ---------------------------------------------------------------------------------------

_DIRECTIVE = re.compile(r"^\s*#\s*([A-Za-z_]+)\s*(.*)$", re.DOTALL)
_INCLUDE = re.compile(r'^\s*(?:<([^>]*)>|"([^"]*)"|(.+))')
_DEFINE = re.compile(r"^([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NOT_MACROS = frozenset({"defined", "__has_include", "__has_include_next", "__has_attribute",
                         "__has_cpp_attribute", "__has_builtin", "__has_feature", "__has_extension",
                         "true", "false"})


def _negate(condition: str) -> str:
    return f"!({condition})"


def _branch_entries(branch_conditions: tuple[str, ...], position: int) -> list[str]:
    """The stack entries of branch `position`: earlier branches negated, then its own test."""
    entries = [_negate(c) for c in branch_conditions[:position] if c != "#else"]
    own = branch_conditions[position]
    if own != "#else":
        entries.append(own)
    return entries


def _strip_comments(text: str, in_comment: bool) -> tuple[str, bool]:
    """`text` without comments and string contents' effect; whether a /* stays open after it."""
    out: list[str] = []
    index = 0
    length = len(text)
    quote = ""
    while index < length:
        char = text[index]
        if in_comment:
            end = text.find("*/", index)
            if end < 0:
                return "".join(out), True
            out.append(" ")
            index = end + 2
            in_comment = False
            continue
        if quote:
            out.append(char)
            if char == "\\" and index + 1 < length:
                out.append(text[index + 1])
                index += 2
                continue
            if char == quote:
                quote = ""
            index += 1
            continue
        if char in "\"'":
            # A quote between digits is a C++14 digit separator (1'000), not a character literal.
            if char == "'" and index and text[index - 1].isalnum() and index + 1 < length and text[index + 1].isalnum():
                out.append(char)
                index += 1
                continue
            quote = char
            out.append(char)
            index += 1
            continue
        if text.startswith("//", index):
            break
        if text.startswith("/*", index):
            in_comment = True
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out), in_comment


def _normalize_expression(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass(slots=True)
class _OpenConditional:
    """An `#if` group while the scan is inside it."""

    line: int
    branch_conditions: list[str]
    branch_lines: list[int]
    body_starts: list[int]  # 0-based index of each branch's first line after its directive
    else_line: int | None = None


@dataclass(frozen=True, slots=True)
class _Scan:
    """What the preprocessor scan found, plus the source with directive lines blanked."""

    includes: tuple[Include, ...]
    conditional_blocks: tuple[ConditionalBlock, ...]
    macros_tested: tuple[MacroUse, ...]
    macros_defined: tuple[MacroDefinition, ...]
    line_conditions: tuple[tuple[str, ...], ...]
    blanked: str
    problems: tuple[ParseProblem, ...]


def _scan(path: str, text: str) -> _Scan:
    lines = text.split("\n")
    includes: list[Include] = []
    blocks: list[ConditionalBlock] = []
    tested: list[MacroUse] = []
    defined: list[MacroDefinition] = []
    problems: list[ParseProblem] = []
    line_conditions: list[tuple[str, ...]] = []
    blanked: list[str] = []
    open_blocks: list[_OpenConditional] = []
    in_comment = False
    current: tuple[str, ...] = ()
    index = 0

    def stack() -> tuple[str, ...]:
        entries: list[str] = []
        for block in open_blocks:
            entries.extend(_branch_entries(tuple(block.branch_conditions), len(block.branch_conditions) - 1))
        return tuple(entries)

    def close(block: _OpenConditional, end_line: int) -> None:
        ends = [*block.branch_lines[1:], end_line]
        texts = tuple("\n".join(lines[block.body_starts[i]: ends[i] - 1]) for i in range(len(block.branch_lines)))
        condition = block.branch_conditions[0]
        blocks.append(ConditionalBlock(condition, block.line, block.else_line, end_line, texts,
                                       tuple(block.branch_conditions), tuple(block.branch_lines)))

    while index < len(lines):
        line_number = index + 1
        raw = lines[index]
        stripped, comment_after = _strip_comments(raw, in_comment)
        directive = None if in_comment else _DIRECTIVE.match(stripped)
        if in_comment or directive is None:
            line_conditions.append(current)
            blanked.append(raw)
            in_comment = comment_after
            index += 1
            continue
        # Join continuation lines; comments inside the directive are dropped.
        body_lines = [raw]
        while body_lines[-1].rstrip().endswith("\\") and index + len(body_lines) < len(lines):
            body_lines.append(lines[index + len(body_lines)])
        joined = "\n".join(line.rstrip()[:-1] if line.rstrip().endswith("\\") else line for line in body_lines)
        joined, in_comment = _strip_comments(joined, False)
        match = _DIRECTIVE.match(joined)
        name, argument = (match.group(1), match.group(2).strip()) if match else ("", "")
        for _ in body_lines:
            line_conditions.append(current)
            blanked.append("")
        index += len(body_lines)

        if name in ("if", "ifdef", "ifndef"):
            condition = _directive_condition(name, argument)
            tested.extend(MacroUse(m, line_number) for m in _macros_in(name, argument))
            open_blocks.append(_OpenConditional(line_number, [condition], [line_number], [index]))
        elif name in ("elif", "elifdef", "elifndef"):
            if not open_blocks:
                problems.append(ParseProblem(path, line_number, f"#{name} without #if"))
                continue
            condition = _directive_condition(name.replace("el", "", 1) if name != "elif" else "if", argument)
            tested.extend(MacroUse(m, line_number) for m in _macros_in(name, argument))
            open_blocks[-1].branch_conditions.append(condition)
            open_blocks[-1].branch_lines.append(line_number)
            open_blocks[-1].body_starts.append(index)
        elif name == "else":
            if not open_blocks:
                problems.append(ParseProblem(path, line_number, "#else without #if"))
                continue
            open_blocks[-1].branch_conditions.append("#else")
            open_blocks[-1].branch_lines.append(line_number)
            open_blocks[-1].body_starts.append(index)
            open_blocks[-1].else_line = line_number
        elif name == "endif":
            if not open_blocks:
                problems.append(ParseProblem(path, line_number, "#endif without #if"))
                continue
            close(open_blocks.pop(), line_number)
        elif name in ("include", "include_next", "import"):
            target = _INCLUDE.match(argument)
            if target:
                system = target.group(1) is not None
                text_value = target.group(1) if system else (target.group(2) if target.group(2) is not None else target.group(3).strip())
                includes.append(Include(text_value, line_number, system, current))
        elif name == "define":
            definition = _DEFINE.match(argument)
            if definition:
                parameters = None
                if definition.group(2) is not None:
                    parameters = tuple(p.strip() for p in definition.group(3).split(",") if p.strip())
                defined.append(MacroDefinition(definition.group(1), _normalize_expression(definition.group(4)),
                                               line_number, parameters))
        current = stack()
        # Lines after a directive that opened/closed a branch belong to the new stack;
        # the directive line itself keeps the enclosing stack (set above).

    for block in reversed(open_blocks):
        problems.append(ParseProblem(path, block.line, "#if without #endif"))
        close(block, len(lines))
    blocks.sort(key=lambda b: b.line)
    return _Scan(tuple(includes), tuple(blocks), tuple(tested), tuple(defined), tuple(line_conditions),
                 "\n".join(blanked), tuple(problems))


def _directive_condition(name: str, argument: str) -> str:
    if name == "ifdef":
        return f"defined({argument.split()[0]})" if argument else "defined()"
    if name == "ifndef":
        return f"!defined({argument.split()[0]})" if argument else "!defined()"
    return _normalize_expression(argument)


def _macros_in(name: str, argument: str) -> list[str]:
    if name in ("ifdef", "ifndef", "elifdef", "elifndef"):
        return argument.split()[:1]
    # __has_include(<path/x.h>) names a file, not macros.
    cleaned = re.sub(r"__has_include(_next)?\s*\([^)]*\)", " ", argument)
    cleaned = re.sub(r"'(\\.|[^\\'])*'", " ", cleaned)
    found = []
    for identifier in _IDENTIFIER.findall(re.sub(r"\b\d\w*", " ", cleaned)):
        if identifier not in _NOT_MACROS and identifier not in found:
            found.append(identifier)
    return found


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
        for position, start in enumerate(block.branch_lines):
            stop = block.branch_lines[position + 1] if position + 1 < len(block.branch_lines) else block.end_line
            entries = _branch_entries(block.branch_conditions, position)
            bounds = [b for b in (_min_arch(e) for e in entries) if b is not None]
            if bounds:
                found.append(ArchRequirement(max(bounds), start, stop, " && ".join(entries)))
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
_RECORD_KINDS = {"class_specifier": "class", "struct_specifier": "struct", "union_specifier": "union",
                 "enum_specifier": "enum"}


def _text(node: Node | None) -> str:
    return "" if node is None else node.text.decode("utf-8", errors="replace")


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
    while declarator is not None and declarator.type in (*_DECLARATOR_WRAPPERS, "function_declarator",
                                                          "init_declarator", "array_declarator"):
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


def _declarations(
    root: Node, line_conditions: tuple[tuple[str, ...], ...]
) -> Iterator[Declaration]:
    def conditions(line: int) -> tuple[str, ...]:
        return line_conditions[line - 1] if 0 < line <= len(line_conditions) else ()

    def make(node: Node, name: str, scope: tuple[str, ...], written_scope: str, is_definition: bool,
             extern_c: bool, kind: str) -> Declaration:
        qualified = "::".join(p for p in (*scope, written_scope, name) if p)
        line = node.start_point[0] + 1
        return Declaration(name, qualified, line, node.end_point[0] + 1, is_definition, extern_c,
                           conditions(line), kind)

    def visit(node: Node, scope: tuple[str, ...], extern_c: bool, in_record: bool) -> Iterator[Declaration]:
        for child in node.children:
            kind = child.type
            if kind == "namespace_definition":
                name = _text(child.child_by_field_name("name"))
                body = child.child_by_field_name("body")
                if body is not None:
                    yield from visit(body, (*scope, *[p for p in name.split("::") if p]), extern_c, False)
            elif kind == "linkage_specification":
                body = child.child_by_field_name("body")
                if body is None:
                    continue
                if body.type == "declaration_list":
                    yield from visit(body, scope, _is_extern_c(child), in_record)
                elif body.type == "declaration":
                    # `extern "C" int x;` declares, like `extern int x;`.
                    yield from declaration(body, scope, _is_extern_c(child), in_record, declares_only=True)
                else:
                    yield from visit(_Single(body), scope, _is_extern_c(child), in_record)
            elif kind in ("template_declaration", "preproc_if", "preproc_ifdef", "preproc_else",
                          "preproc_elif", "ERROR", "declaration_list", "export_declaration"):
                yield from visit(child, scope, extern_c, in_record)
            elif kind == "function_definition":
                declarator = child.child_by_field_name("declarator")
                name, written = _declared_name(declarator)
                if name:
                    yield make(child, name, scope, written, True, extern_c, "function")
            elif kind in ("declaration", "field_declaration"):
                yield from declaration(child, scope, extern_c, in_record)
            elif kind in _RECORD_KINDS:
                yield from record(child, scope, extern_c)

    def declaration(node: Node, scope: tuple[str, ...], extern_c: bool, in_record: bool,
                    declares_only: bool = False) -> Iterator[Declaration]:
        type_node = node.child_by_field_name("type")
        if type_node is not None and type_node.type in _RECORD_KINDS:
            yield from record(type_node, scope, extern_c)
        storage = {_text(c) for c in node.children if c.type == "storage_class_specifier"}
        for declarator in node.children_by_field_name("declarator"):
            name, written = _declared_name(declarator)
            if not name:
                continue
            if _function_declarator(declarator) is not None:
                yield make(node, name, scope, written, False, extern_c, "function")
            elif not in_record:
                # `extern int x;` only declares, unless it has an initializer.
                is_definition = declarator.type == "init_declarator" or (
                    "extern" not in storage and not declares_only)
                yield make(node, name, scope, written, is_definition, extern_c, "variable")

    def record(node: Node, scope: tuple[str, ...], extern_c: bool) -> Iterator[Declaration]:
        name = _text(node.child_by_field_name("name"))
        body = node.child_by_field_name("body")
        if not name or body is None:
            return
        yield make(node, name, scope, "", True, extern_c, _RECORD_KINDS[node.type])
        if node.type != "enum_specifier":
            yield from visit(body, (*scope, name), extern_c, True)

    yield from visit(root, (), False, False)


class _Single:
    """Presents one node as the only child of a container, for `visit`."""

    def __init__(self, node: Node) -> None:
        self.children = [node]


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


def source_facts(path: str, source: str | bytes) -> SourceFacts:
    """The facts of one C/C++/CUDA file."""
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    scan = _scan(path, text)
    tree = _parser(path.endswith(CUDA_SUFFIXES)).parse(scan.blanked.encode("utf-8"))
    declarations = tuple(_declarations(tree.root_node, scan.line_conditions))
    return SourceFacts(
        path=path,
        includes=scan.includes,
        declarations=declarations,
        conditional_blocks=scan.conditional_blocks,
        macros_tested=scan.macros_tested,
        macros_defined=scan.macros_defined,
        arch_requirements=tuple(_arch_requirements(scan.conditional_blocks)),
        problems=scan.problems,
        unparsed_lines=tuple(sorted(set(_error_lines(tree.root_node)))),
    )


def _error_lines(node: Node) -> Iterator[int]:
    """First lines of the regions tree-sitter could not parse (export macros, split
    signatures): declarations there may be missing, which is not the file's fault."""
    for child in node.children:
        if child.type == "ERROR" or child.is_missing:
            yield child.start_point[0] + 1
        elif child.has_error:
            yield from _error_lines(child)


_facts: OrderedDict[tuple[str, str], SourceFacts] = OrderedDict()
_FACTS_CACHE_SIZE = 8192


def source_facts_cached(blob_id: str | None, path: str, source: str | bytes) -> SourceFacts:
    """`source_facts`, remembered by (blob id, path) in a bounded in-memory LRU."""
    if blob_id is None:
        return source_facts(path, source)
    key = (blob_id, path)
    cached = _facts.get(key)
    if cached is not None:
        _facts.move_to_end(key)
        return cached
    facts = source_facts(path, source)
    _facts[key] = facts
    if len(_facts) > _FACTS_CACHE_SIZE:
        _facts.popitem(last=False)
    return facts


def clear_facts_cache() -> None:
    """Forget remembered facts (benchmarks measure cold runs with it)."""
    _facts.clear()


def source_facts_in_tree(tree: FileTree, path: str) -> SourceFacts | None:
    """The facts of `path` in `tree` (cached by blob), or None when it cannot be read."""
    data = tree.read(path)
    if data is None:
        return None
    return source_facts_cached(tree.blob_id(path), path, data)


def is_source_path(path: str) -> bool:
    """Whether `path` is a C, C++ or CUDA source or header by its suffix."""
    return path.endswith(SOURCE_SUFFIXES)


# ---------------------------------------------------------------------------------------
# Preprocessor conditions
# ---------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<number>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)[uUlL]*)
      | (?P<char>'(?:\\.|[^\\'])+')
      | (?P<identifier>[A-Za-z_]\w*)
      | (?P<operator>\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),])""",
    re.VERBOSE,
)
_CHAR_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8, "f": 12, "v": 11}


class _Unreadable(Exception):
    """The expression is not a preprocessor expression this evaluator can read."""


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "value", "op", "identifier"
    text: str
    value: int | None = None


def _tokenize(expression: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            raise _Unreadable(expression[position:])
        position = match.end()
        kind = match.lastgroup
        text = match.group(0)
        if kind == "space":
            continue
        if kind == "number":
            digits = text.rstrip("uUlL").replace("'", "")
            if digits.startswith(("0x", "0X")):
                value = int(digits, 16)
            elif digits.startswith(("0b", "0B")):
                value = int(digits[2:], 2)
            elif len(digits) > 1 and digits.startswith("0"):
                value = int(digits, 8)
            else:
                value = int(digits)
            tokens.append(_Tok("value", text, value))
        elif kind == "char":
            body = text[1:-1]
            value = _CHAR_ESCAPES.get(body[1], ord(body[1])) if body.startswith("\\") else ord(body[0])
            tokens.append(_Tok("value", text, value))
        elif kind == "identifier":
            tokens.append(_Tok("identifier", text))
        else:
            tokens.append(_Tok("op", text))
    return tokens


_UNKNOWN = _Tok("value", "?", None)


def _expand(tokens: list[_Tok], defines: Mapping[str, str | None], assume_undefined_false: bool,
            active: frozenset[str] = frozenset()) -> list[_Tok]:
    """Replace `defined`, macros and identifiers by values (None where unknown)."""
    out: list[_Tok] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind != "identifier":
            out.append(token)
            index += 1
            continue
        name = token.text
        if name == "defined":
            following = tokens[index + 1 : index + 4]
            if following[:1] and following[0].text == "(":
                if len(following) < 3 or following[2].text != ")":
                    raise _Unreadable("defined(")
                macro, index = following[1].text, index + 4
            elif following:
                macro, index = following[0].text, index + 2
            else:
                raise _Unreadable("defined")
            if macro in defines:
                out.append(_Tok("value", macro, 0 if defines[macro] is None else 1))
            else:
                out.append(_Tok("value", macro, 0) if assume_undefined_false else _UNKNOWN)
            continue
        if name.startswith("__has_") and index + 1 < len(tokens) and tokens[index + 1].text == "(":
            depth, index = 0, index + 1
            while index < len(tokens):
                depth += {"(": 1, ")": -1}.get(tokens[index].text, 0)
                index += 1
                if depth == 0:
                    break
            out.append(_UNKNOWN)
            continue
        index += 1
        if name in ("true", "false"):
            out.append(_Tok("value", name, 1 if name == "true" else 0))
        elif name in defines and name not in active:
            body = defines[name]
            if body is None:
                out.append(_Tok("value", name, 0))
            else:
                out.extend(_expand(_tokenize(body), defines, assume_undefined_false, active | {name}))
        elif index < len(tokens) and tokens[index].text == "(":
            # A function-like macro we were not given: its value cannot be known.
            depth = 0
            while index < len(tokens):
                depth += {"(": 1, ")": -1}.get(tokens[index].text, 0)
                index += 1
                if depth == 0:
                    break
            out.append(_UNKNOWN)
        else:
            out.append(_Tok("value", name, 0) if assume_undefined_false else _UNKNOWN)
    return out


class _ExpressionParser:
    """Precedence climbing over C's preprocessor operators, with None for unknown values."""

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
        ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
    )

    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> str | None:
        return self.tokens[self.position].text if self.position < len(self.tokens) and self.tokens[self.position].kind == "op" else None

    def take(self) -> _Tok:
        if self.position >= len(self.tokens):
            raise _Unreadable("unexpected end")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def parse(self) -> int | None:
        value = self.conditional()
        if self.position != len(self.tokens):
            raise _Unreadable("trailing tokens")
        return value

    def conditional(self) -> int | None:
        condition = self.binary(0)
        if self.peek() != "?":
            return condition
        self.take()
        when_true = self.conditional()
        if self.take().text != ":":
            raise _Unreadable("?: without :")
        when_false = self.conditional()
        if condition is None:
            return when_true if when_true == when_false else None
        return when_true if condition else when_false

    def binary(self, level: int) -> int | None:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            operator = self.take().text
            right = self.binary(level + 1)
            left = _apply(operator, left, right)
        return left

    def unary(self) -> int | None:
        operator = self.peek()
        if operator in ("!", "~", "-", "+"):
            self.take()
            value = self.unary()
            if value is None:
                return None
            return {"!": int(not value), "~": ~value, "-": -value, "+": value}[operator]
        token = self.take()
        if token.kind == "op" and token.text == "(":
            value = self.conditional()
            if self.take().text != ")":
                raise _Unreadable("missing )")
            return value
        if token.kind != "value":
            raise _Unreadable(token.text)
        return token.value


def _apply(operator: str, left: int | None, right: int | None) -> int | None:
    if operator == "&&":
        if left == 0 or right == 0:
            return 0
        return None if left is None or right is None else 1
    if operator == "||":
        if (left is not None and left != 0) or (right is not None and right != 0):
            return 1
        return None if left is None or right is None else 0
    if left is None or right is None:
        return None
    if operator in ("/", "%") and right == 0:
        return None
    results = {
        "|": lambda: left | right, "^": lambda: left ^ right, "&": lambda: left & right,
        "==": lambda: int(left == right), "!=": lambda: int(left != right),
        "<": lambda: int(left < right), ">": lambda: int(left > right),
        "<=": lambda: int(left <= right), ">=": lambda: int(left >= right),
        "<<": lambda: left << right if 0 <= right < 64 else 0, ">>": lambda: left >> right if right >= 0 else 0,
        "+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
        # C truncates toward zero.
        "/": lambda: int(left / right), "%": lambda: left - int(left / right) * right,
    }
    return results[operator]()


def evaluate_condition(
    expression: str, defines: Mapping[str, str | None], assume_undefined_false: bool = False
) -> bool | None:
    """Decide an `#if` expression; None when it depends on something `defines` does not say.

    `defines` maps a macro to its replacement text ("" when defined empty) or to None when
    it is known to be undefined (`-UX`). A macro absent from `defines` is unknown, unless
    `assume_undefined_false` applies C's rule that undefined identifiers are 0.
    """
    try:
        tokens = _expand(_tokenize(expression), defines, assume_undefined_false)
        if not tokens:
            return None
        value = _ExpressionParser(tokens).parse()
    except (_Unreadable, RecursionError):
        return None
    return None if value is None else value != 0


def conditions_hold(
    conditions: Iterable[str], defines: Mapping[str, str | None], assume_undefined_false: bool = False
) -> bool | None:
    """Whether every entry of an `#if` stack holds: False if one is false, None if one is unknown."""
    unknown = False
    for condition in conditions:
        value = evaluate_condition(condition, defines, assume_undefined_false)
        if value is False:
            return False
        unknown = unknown or value is None
    return None if unknown else True


def defines_from_flags(flags: Iterable[str]) -> dict[str, str | None]:
    """Macros set by compiler flags: `-DX` (=1), `-DX=v`, `-D X`, `/DX`, and `-UX`/`/UX` (None)."""
    defines: dict[str, str | None] = {}
    pending: str | None = None
    for flag in flags:
        if pending is not None:
            flag, pending = pending + flag, None
        if flag in ("-D", "/D", "-U", "/U"):
            pending = flag
            continue
        if flag.startswith(("-D", "/D")) and len(flag) > 2:
            name, has_value, value = flag[2:].partition("=")
            defines[name] = _unquote(value) if has_value else "1"
        elif flag.startswith(("-U", "/U")) and len(flag) > 2:
            defines[flag[2:]] = None
    return defines


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
