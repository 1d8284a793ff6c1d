"""Preprocessor conditions: an `#if` expression decided against a set of defines.

`evaluate_condition` decides an `#if` expression against a target's `-D` flags
(`defines_from_flags`), so that "is this include active for this target" has an answer; a
condition whose macros the defines do not settle is unknown (None), never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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
