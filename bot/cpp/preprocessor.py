"""The preprocessor layer of C, C++ and CUDA files: `#if` stacks, includes, macros, conditions.

A line-based scan gives the `#if`/`#elif`/`#else` condition stack of every line, the includes,
the macros tested and defined, and the conditional blocks. It does not care whether the code
between directives is well-formed. It is linear in the file: a line keeps a reference to the
stack frame it sits in (frames are shared, never copied), a stack is spelled out only for the
includes and declarations that carry one, and a block's branch texts are slices of the file's
lines taken when asked for.

`evaluate_condition` decides an `#if` expression against a set of defines (a target's `-D`
flags), so that "is this include active for this target" has an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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


def _expand(
    tokens: list[_Tok],
    defines: Mapping[str, str | None],
    assume_undefined_false: bool,
    active: frozenset[str] = frozenset(),
) -> list[_Tok]:
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
        ("||",),
        ("&&",),
        ("|",),
        ("^",),
        ("&",),
        ("==", "!="),
        ("<", ">", "<=", ">="),
        ("<<", ">>"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> str | None:
        return (
            self.tokens[self.position].text
            if self.position < len(self.tokens) and self.tokens[self.position].kind == "op"
            else None
        )

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
        "|": lambda: left | right,
        "^": lambda: left ^ right,
        "&": lambda: left & right,
        "==": lambda: int(left == right),
        "!=": lambda: int(left != right),
        "<": lambda: int(left < right),
        ">": lambda: int(left > right),
        "<=": lambda: int(left <= right),
        ">=": lambda: int(left >= right),
        "<<": lambda: left << right if 0 <= right < 64 else 0,
        ">>": lambda: left >> right if right >= 0 else 0,
        "+": lambda: left + right,
        "-": lambda: left - right,
        "*": lambda: left * right,
        # C truncates toward zero.
        "/": lambda: int(left / right),
        "%": lambda: left - int(left / right) * right,
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
