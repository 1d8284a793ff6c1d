"""if() conditions: CMake's operator precedence over expanded arguments.

Parentheses first, then unary tests (DEFINED, TARGET, EXISTS, ...), binary comparisons
(STREQUAL, MATCHES, VERSION_LESS, ...), NOT, AND, OR. An argument list CMake would reject is
a problem on the model and the condition is false.
"""

from __future__ import annotations

import operator
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.cmake.budgets import MAX_NESTING, NestingTooDeep
from bot.cmake.model import repo_path
from bot.cmake.regexes import RegexError, RegexTimeout
from bot.cmake.state import Frame
from bot.cmake.syntax import Command
from bot.cmake.values import constant_truth, is_false_value, split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


@dataclass(frozen=True, slots=True)
class Token:
    """A condition argument after expansion; `value` is set once a sub-expression is decided."""

    text: str
    quoted: bool
    value: bool | None = None
    paren: bool = False

    def is_keyword(self, *keywords: str) -> bool:
        return not self.quoted and self.value is None and not self.paren and self.text in keywords


_UNARY = (
    "EXISTS",
    "COMMAND",
    "DEFINED",
    "TARGET",
    "POLICY",
    "TEST",
    "IS_DIRECTORY",
    "IS_SYMLINK",
    "IS_ABSOLUTE",
    "IS_READABLE",
    "IS_WRITABLE",
    "IS_EXECUTABLE",
)
_BINARY = (
    "MATCHES",
    "LESS",
    "GREATER",
    "EQUAL",
    "LESS_EQUAL",
    "GREATER_EQUAL",
    "STRLESS",
    "STRGREATER",
    "STREQUAL",
    "STRLESS_EQUAL",
    "STRGREATER_EQUAL",
    "VERSION_LESS",
    "VERSION_GREATER",
    "VERSION_EQUAL",
    "VERSION_LESS_EQUAL",
    "VERSION_GREATER_EQUAL",
    "IN_LIST",
    "IS_NEWER_THAN",
    "PATH_EQUAL",
)
_COMPARISONS: Mapping[str, Callable[[Any, Any], bool]] = {
    "LESS": operator.lt,
    "GREATER": operator.gt,
    "EQUAL": operator.eq,
    "LESS_EQUAL": operator.le,
    "GREATER_EQUAL": operator.ge,
}


class _ConditionError(Exception):
    """An if() argument list CMake itself would reject; reported as a problem."""


class _ConditionLimit(Exception):
    """A budget ran out while deciding the condition; reported as a limit."""


def _version_key(text: str) -> tuple[int, ...]:
    numbers = []
    for part in text.split("."):
        leading = re.match(r"\d*", part)
        digits = leading.group(0) if leading else ""
        numbers.append(int(digits) if digits else 0)
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def condition(ev: Evaluation, command: Command, frame: Frame) -> bool:
    """Whether the if()/elseif()/while() condition of `command` holds in `frame`."""
    tokens: list[Token] = []
    for arg in command.args:
        if not arg.quoted and arg.text in ("(", ")"):
            tokens.append(Token(arg.text, False, paren=True))
            continue
        value = ev.expand_one(arg, frame)
        if arg.quoted:
            tokens.append(Token(value, True))
        else:
            tokens.extend(Token(element, False) for element in split_list(value))
    if not tokens:
        return False  # `if()` (e.g. `if(${UNDEFINED})`) is false, not an error
    if _deepest_parenthesis(tokens) > MAX_NESTING:
        raise NestingTooDeep(f"parentheses nested deeper than {MAX_NESTING}")
    try:
        return _truth(ev, _reduce(ev, tokens, frame), frame)
    except _ConditionError as error:
        ev.problem(command, f"{command.name}(): {error}")
        return False
    except _ConditionLimit as error:
        ev.limit(command.path, command.line, f"{command.name}(): {error}")
        return False


def _deepest_parenthesis(tokens: list[Token]) -> int:
    """How deep parentheses nest (_reduce recurses once per level)."""
    depth = deepest = 0
    for token in tokens:
        if token.paren:
            depth += 1 if token.text == "(" else -1
            deepest = max(deepest, depth)
    return deepest


def _reduce(ev: Evaluation, tokens: list[Token], frame: Frame) -> Token:
    # Parentheses first, innermost out.
    flat: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.paren and token.text == "(":
            depth, close = 1, index + 1
            while close < len(tokens) and depth:
                if tokens[close].paren:
                    depth += 1 if tokens[close].text == "(" else -1
                close += 1
            if depth:
                raise _ConditionError("mismatched parenthesis")
            inner = _reduce(ev, tokens[index + 1 : close - 1], frame)
            flat.append(Token("", False, _truth(ev, inner, frame)))
            index = close
            continue
        if token.paren:
            raise _ConditionError("mismatched parenthesis")
        flat.append(token)
        index += 1
    flat = _reduce_unary(ev, flat, frame)
    flat = _reduce_binary(ev, flat, frame)
    # NOT binds tighter than AND, which binds tighter than OR.
    index = len(flat) - 2
    while index >= 0:
        if flat[index].is_keyword("NOT"):
            flat[index : index + 2] = [Token("", False, not _truth(ev, flat[index + 1], frame))]
        index -= 1
    for keyword in ("AND", "OR"):
        index = 1
        while index < len(flat) - 1:
            if flat[index].is_keyword(keyword):
                left, right = _truth(ev, flat[index - 1], frame), _truth(ev, flat[index + 1], frame)
                flat[index - 1 : index + 2] = [
                    Token("", False, (left and right) if keyword == "AND" else (left or right))
                ]
            else:
                index += 1
    if len(flat) != 1:
        raise _ConditionError("unknown arguments " + " ".join(t.text for t in flat))
    return flat[0]


def _reduce_unary(ev: Evaluation, tokens: list[Token], frame: Frame) -> list[Token]:
    index = 0
    while index < len(tokens) - 1:
        token = tokens[index]
        if token.is_keyword(*_UNARY):
            operand = tokens[index + 1].text
            tokens[index : index + 2] = [Token("", False, _unary(ev, token.text, operand, frame))]
        index += 1
    return tokens


def _unary(ev: Evaluation, keyword: str, operand: str, frame: Frame) -> bool:
    if keyword == "DEFINED":
        match = re.fullmatch(r"(ENV|CACHE)\{(.*)\}", operand)
        if match:
            store = ev.environment if match.group(1) == "ENV" else ev.cache
            return match.group(2) in store
        return ev.defined(frame, operand)
    if keyword == "TARGET":
        return operand in ev.targets
    if keyword == "COMMAND":
        return operand.lower() in ev.callables or operand.lower() in ev.handlers
    if keyword in ("EXISTS", "IS_DIRECTORY", "IS_READABLE", "IS_SYMLINK"):
        path = repo_path(operand) if operand.startswith("/") else None
        if path is None:
            return False
        if keyword == "IS_DIRECTORY":
            return ev.tree.is_dir(path)
        return path == "" or ev.tree.exists(path) or ev.tree.is_dir(path)
    if keyword == "IS_ABSOLUTE":
        return operand.startswith("/") or bool(re.match(r"^[A-Za-z]:[/\\]", operand))
    return keyword == "POLICY"


def _reduce_binary(ev: Evaluation, tokens: list[Token], frame: Frame) -> list[Token]:
    index = 0
    while index < len(tokens) - 2:
        keyword = tokens[index + 1]
        if keyword.is_keyword(*_BINARY):
            result = _binary(ev, keyword.text, tokens[index], tokens[index + 2], frame)
            tokens[index : index + 3] = [Token("", False, result)]
        else:
            index += 1
    return tokens


def _operand(ev: Evaluation, token: Token, frame: Frame) -> str:
    if token.value is not None:
        return "1" if token.value else "0"
    if not token.quoted:
        entry = frame.scope.get(token.text)
        if entry is not None:
            return entry[0]
        if token.text in ev.cache:
            return ev.cache[token.text]
    return token.text


def _binary(ev: Evaluation, keyword: str, left_token: Token, right_token: Token, frame: Frame) -> bool:
    left = _operand(ev, left_token, frame)
    if keyword == "MATCHES":
        try:
            match = ev.regexes.search(right_token.text, left)
        except RegexError:
            raise _ConditionError(f"bad regular expression {right_token.text!r}") from None
        except RegexTimeout as timeout:
            raise _ConditionLimit(f"MATCHES {right_token.text!r}: {timeout}") from None
        if match:
            for group in range(10):
                if group <= (match.re.groups or 0):
                    frame.scope.set(f"CMAKE_MATCH_{group}", match.group(group) or "")
            frame.scope.set("CMAKE_MATCH_COUNT", str(match.re.groups))
        return match is not None
    if keyword == "IN_LIST":
        return left in split_list(ev.lookup(frame, "", right_token.text))
    right = _operand(ev, right_token, frame)
    if keyword in _COMPARISONS:
        try:
            return _COMPARISONS[keyword](float(left), float(right))
        except ValueError:
            return False
    if keyword.startswith("VERSION_"):
        comparison = _COMPARISONS[keyword[len("VERSION_") :]]
        return comparison(_version_key(left), _version_key(right))
    if keyword.startswith("STR"):
        comparison = {
            "STRLESS": operator.lt,
            "STRGREATER": operator.gt,
            "STREQUAL": operator.eq,
            "STRLESS_EQUAL": operator.le,
            "STRGREATER_EQUAL": operator.ge,
        }[keyword]
        return comparison(left, right)
    if keyword == "PATH_EQUAL":
        return posixpath.normpath(left) == posixpath.normpath(right)
    return False


def _truth(ev: Evaluation, token: Token, frame: Frame) -> bool:
    if token.value is not None:
        return token.value
    constant = constant_truth(token.text)
    if constant is not None:
        return constant
    if token.quoted:
        return False
    entry = frame.scope.get(token.text)
    value = entry[0] if entry is not None else ev.cache.get(token.text)
    return value is not None and not is_false_value(value)


# -- location helpers ----------------------------------------------------------------
