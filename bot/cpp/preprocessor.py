"""The preprocessor layer of C, C++ and CUDA files: `#if` stacks, includes, macros, conditions.

A line-based scan gives the `#if`/`#elif`/`#else` condition stack of every line, the includes,
the macros tested and defined, and the conditional blocks. It does not care whether the code
between directives is well-formed. It is linear in the file: a line keeps a reference to the
stack frame it sits in (frames are shared, never copied), a stack is spelled out only for the
includes and declarations that carry one, and a block's branch texts are slices of the file's
lines taken when asked for.

Whether a condition holds for a target (its `-D` flags) is bot/cpp/conditions.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.cmake.syntax import ParseProblem


@dataclass(frozen=True, slots=True)
class Include:
    """`#include <target_text>` (system) or `"target_text"`, under `conditions`."""

    target_text: str
    line: int
    system: bool
    conditions: tuple[str, ...]


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
    branch_conditions: tuple[str, ...]
    branch_lines: tuple[int, ...]
    branch_spans: tuple[tuple[int, int], ...]  # 0-based [start, stop) line slices of each branch body
    # The file's lines, one tuple shared by every block of the file: nested blocks would
    # otherwise each copy their inner text, quadratic in the nesting depth.
    source_lines: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def branch_texts(self) -> tuple[str, ...]:
        """Each branch's source lines, its directive lines excluded."""
        return tuple("\n".join(self.source_lines[start:stop]) for start, stop in self.branch_spans)


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


# ---------------------------------------------------------------------------------------
# The scan
# ---------------------------------------------------------------------------------------

_DIRECTIVE = re.compile(r"^\s*#\s*([A-Za-z_]+)\s*(.*)$", re.DOTALL)
_INCLUDE = re.compile(r'^\s*(?:<([^>]*)>|"([^"]*)"|(.+))')
_DEFINE = re.compile(r"^([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NOT_MACROS = frozenset(
    {
        "defined",
        "__has_include",
        "__has_include_next",
        "__has_attribute",
        "__has_cpp_attribute",
        "__has_builtin",
        "__has_feature",
        "__has_extension",
        "true",
        "false",
    }
)


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


def _negate(condition: str) -> str:
    return f"!({condition})"


def _branch_entries(branch_conditions: tuple[str, ...], position: int) -> list[str]:
    """The stack entries of branch `position`: earlier branches negated, then its own test."""
    entries = [_negate(c) for c in branch_conditions[:position] if c != "#else"]
    own = branch_conditions[position]
    if own != "#else":
        entries.append(own)
    return entries


@dataclass(slots=True)
class _OpenConditional:
    """An `#if` group while the scan is inside it."""

    line: int
    branch_conditions: list[str]
    branch_lines: list[int]
    body_starts: list[int]  # 0-based index of each branch's first line after its directive
    else_line: int | None = None


class _Frame:
    """One branch of an open `#if` on the condition stack; lines inside it point here."""

    __slots__ = ("block", "parent", "position", "spelled")

    def __init__(self, parent: _Frame | None, block: _OpenConditional, position: int) -> None:
        self.parent = parent
        self.block = block
        self.position = position
        self.spelled: tuple[str, ...] | None = None

    def conditions(self) -> tuple[str, ...]:
        """The whole stack as entries, outermost first; spelled once per frame.

        Only the frame asked for is kept spelled: keeping every ancestor's would be quadratic
        in the depth, and most frames are never asked (no include or declaration inside)."""
        if self.spelled is None:
            chain: list[_Frame] = []
            frame: _Frame | None = self
            while frame is not None and frame.spelled is None:
                chain.append(frame)
                frame = frame.parent
            entries = list(frame.spelled or ()) if frame is not None else []  # spelled: the loop stopped there
            for link in reversed(chain):
                conditions = link.block.branch_conditions
                entries.extend(_branch_entries(tuple(conditions[: link.position + 1]), link.position))
            self.spelled = tuple(entries)
        return self.spelled


def _conditions(frame: _Frame | None) -> tuple[str, ...]:
    return () if frame is None else frame.conditions()


@dataclass(frozen=True)
class Scan:
    """What the preprocessor scan found, plus the source with directive lines blanked."""

    includes: tuple[Include, ...]
    conditional_blocks: tuple[ConditionalBlock, ...]
    macros_tested: tuple[MacroUse, ...]
    macros_defined: tuple[MacroDefinition, ...]
    line_frames: tuple[_Frame | None, ...]  # the stack frame of each line (None: outside any #if)
    blanked: str
    problems: tuple[ParseProblem, ...]

    def conditions_at_line(self, line: int) -> tuple[str, ...]:
        """The `#if` stack of a 1-based line."""
        return _conditions(self.line_frames[line - 1]) if 0 < line <= len(self.line_frames) else ()


def scan(path: str, text: str) -> Scan:
    """One pass over the lines of a C/C++/CUDA file: directives, stacks, blanked source."""
    lines = tuple(text.split("\n"))
    includes: list[Include] = []
    blocks: list[ConditionalBlock] = []
    tested: list[MacroUse] = []
    defined: list[MacroDefinition] = []
    problems: list[ParseProblem] = []
    line_frames: list[_Frame | None] = []
    blanked: list[str] = []
    open_blocks: list[_OpenConditional] = []
    frames: list[_Frame] = []  # the innermost frame of each open block
    in_comment = False
    current: _Frame | None = None
    index = 0

    def close(block: _OpenConditional, end_line: int) -> None:
        ends = [*block.branch_lines[1:], end_line]
        spans = tuple(
            (block.body_starts[i], max(block.body_starts[i], ends[i] - 1)) for i in range(len(block.branch_lines))
        )
        blocks.append(
            ConditionalBlock(
                block.branch_conditions[0],
                block.line,
                block.else_line,
                end_line,
                tuple(block.branch_conditions),
                tuple(block.branch_lines),
                spans,
                lines,
            )
        )

    def enter_branch(block: _OpenConditional, replace: bool) -> None:
        if replace:
            frames.pop()
        frames.append(_Frame(frames[-1] if frames else None, block, len(block.branch_conditions) - 1))

    while index < len(lines):
        line_number = index + 1
        raw = lines[index]
        if not in_comment and "#" not in raw and "/" not in raw:
            line_frames.append(current)  # the common line: no directive, no comment to track
            blanked.append(raw)
            index += 1
            continue
        stripped, comment_after = _strip_comments(raw, in_comment)
        directive = None if in_comment else _DIRECTIVE.match(stripped)
        if in_comment or directive is None:
            line_frames.append(current)
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
            line_frames.append(current)
            blanked.append("")
        index += len(body_lines)

        if name in ("if", "ifdef", "ifndef"):
            condition = _directive_condition(name, argument)
            tested.extend(MacroUse(m, line_number) for m in _macros_in(name, argument))
            open_blocks.append(_OpenConditional(line_number, [condition], [line_number], [index]))
            enter_branch(open_blocks[-1], replace=False)
        elif name in ("elif", "elifdef", "elifndef", "else"):
            if not open_blocks:
                problems.append(ParseProblem(path, line_number, f"#{name} without #if"))
                continue
            block = open_blocks[-1]
            if name == "else":
                block.branch_conditions.append("#else")
                block.else_line = line_number
            else:
                block.branch_conditions.append(
                    _directive_condition(name.replace("el", "", 1) if name != "elif" else "if", argument)
                )
                tested.extend(MacroUse(m, line_number) for m in _macros_in(name, argument))
            block.branch_lines.append(line_number)
            block.body_starts.append(index)
            enter_branch(block, replace=True)
        elif name == "endif":
            if not open_blocks:
                problems.append(ParseProblem(path, line_number, "#endif without #if"))
                continue
            close(open_blocks.pop(), line_number)
            frames.pop()
        elif name in ("include", "include_next", "import"):
            target = _INCLUDE.match(argument)
            if target:
                system = target.group(1) is not None
                text_value = (
                    target.group(1)
                    if system
                    else (target.group(2) if target.group(2) is not None else target.group(3).strip())
                )
                includes.append(Include(text_value, line_number, system, _conditions(current)))
        elif name == "define":
            definition = _DEFINE.match(argument)
            if definition:
                parameters = None
                if definition.group(2) is not None:
                    parameters = tuple(p.strip() for p in definition.group(3).split(",") if p.strip())
                defined.append(
                    MacroDefinition(
                        definition.group(1), _normalize_expression(definition.group(4)), line_number, parameters
                    )
                )
        # Lines after a directive that opened/closed a branch belong to the new stack;
        # the directive line itself keeps the enclosing stack (set above).
        current = frames[-1] if frames else None

    for block in reversed(open_blocks):
        problems.append(ParseProblem(path, block.line, "#if without #endif"))
        close(block, len(lines))
    blocks.sort(key=lambda b: b.line)
    return Scan(
        tuple(includes),
        tuple(blocks),
        tuple(tested),
        tuple(defined),
        tuple(line_frames),
        "\n".join(blanked),
        tuple(problems),
    )


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
