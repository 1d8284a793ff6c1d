"""Variables and options: set, unset, option, cmake_dependent_option, math, cmake_parse_arguments."""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING

from bot.cmake.conditions import condition
from bot.cmake.state import Frame
from bot.cmake.syntax import Arg, Command
from bot.cmake.values import is_false_value, split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def set_variable(ev: Evaluation, command: Command, frame: Frame) -> None:
    """set(): a normal variable (keeping each element's conditions), PARENT_SCOPE, CACHE or ENV."""
    if not command.args:
        return
    name = ev.expand_one(command.args[0], frame)
    items = ev.expand_items(command.args[1:], frame)
    words = [item.value for item in items]
    if name.startswith("ENV{") and name.endswith("}"):
        ev.environment[name[4:-1]] = words[0] if words else ""
        return
    if "CACHE" in words and len(words) - words.index("CACHE") >= 3:
        at = len(words) - 1 - words[::-1].index("CACHE")
        kind, force = words[at + 1], "FORCE" in words[at + 3 :]
        if force or kind == "INTERNAL" or name not in ev.cache:
            ev.cache[name] = ";".join(words[:at])
        if kind in ("BOOL", "STRING", "PATH", "FILEPATH"):
            ev.option_names[name] = None
        return
    parent_scope = bool(words) and words[-1] == "PARENT_SCOPE"
    if parent_scope:
        items = items[:-1]
    value = ";".join(item.value for item in items)
    origins = tuple(tuple(dict.fromkeys((*item.origins, *frame.conditions))) for item in items) if items else None
    if parent_scope:
        if frame.scope.parent is not None:
            frame.scope.pin(name)
            frame.scope.parent.set(name, value, origins)
    elif not items:
        frame.scope.unset(name)
    else:
        frame.scope.set(name, value, origins)


def unset_variable(ev: Evaluation, command: Command, frame: Frame) -> None:
    """unset(): normal, PARENT_SCOPE, CACHE or ENV."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    name = words[0]
    if "CACHE" in words[1:]:
        ev.cache.pop(name, None)
    elif "PARENT_SCOPE" in words[1:]:
        if frame.scope.parent is not None:
            frame.scope.pin(name)
            frame.scope.parent.unset(name)
    elif name.startswith("ENV{"):
        ev.environment.pop(name[4:-1], None)
    else:
        frame.scope.unset(name)


def define_option(ev: Evaluation, command: Command, frame: Frame) -> None:
    """option(): a cache default, unless a variable of that name is already set."""
    words = ev.expand(command.args, frame)
    if not words:
        return
    name = words[0]
    ev.option_names[name] = None
    # CMP0077 (NEW since 3.13): a normal variable of the same name wins.
    if frame.scope.get(name) is not None or name in ev.cache:
        return
    default = words[2] if len(words) > 2 else "OFF"
    ev.cache[name] = "ON" if not is_false_value(default) else "OFF"


def define_dependent_option(ev: Evaluation, command: Command, frame: Frame) -> None:
    """cmake_dependent_option(): the default when every dependency holds, else the forced value."""
    words = ev.expand(command.args, frame)
    if len(words) < 5:
        return
    name, _doc, default, depends, force = words[:5]
    ev.option_names[name] = None
    satisfied = True
    for dependency in split_list(depends):
        probe = Command(
            "if",
            tuple(Arg(w, False, command.line) for w in dependency.split()),
            command.line,
            command.line,
            command.path,
        )
        satisfied = satisfied and condition(ev, probe, frame)
    if satisfied:
        if name not in ev.cache:
            ev.cache[name] = "ON" if not is_false_value(default) else "OFF"
    else:
        frame.scope.set(name, force)


def evaluate_math(ev: Evaluation, command: Command, frame: Frame) -> None:
    """math(EXPR out expression [OUTPUT_FORMAT HEXADECIMAL])."""
    words = ev.expand(command.args, frame)
    if len(words) >= 3 and words[0] == "EXPR":
        value = integer_expression(words[2])
        if value is None:
            ev.problem(command, f"math(EXPR): cannot evaluate {words[2]!r}")
            return
        frame.scope.set(words[1], hex(value) if "HEXADECIMAL" in words[3:] else str(value))


def parse_arguments(ev: Evaluation, command: Command, frame: Frame) -> None:
    """cmake_parse_arguments(), both forms: <prefix>_<keyword> variables for the caller."""
    words = ev.expand(command.args, frame)
    if words[:1] == ["PARSE_ARGV"]:
        if len(words) < 6:
            return
        first = int(words[1]) if words[1].isdigit() else 0
        prefix, options, singles, multis = words[2], words[3], words[4], words[5]
        count = int(ev.lookup(frame, "", "ARGC") or 0)
        arguments = [ev.lookup(frame, "", f"ARGV{i}") for i in range(first, count)]
    else:
        # The keyword lists may be empty strings, which expand() drops; read them raw.
        if len(command.args) < 4:
            return
        prefix, options, singles, multis = (ev.expand_one(a, frame) for a in command.args[:4])
        arguments = ev.expand(command.args[4:], frame)
    option_names, single_names, multi_names = split_list(options), split_list(singles), split_list(multis)
    keywords = set(option_names) | set(single_names) | set(multi_names)
    results: dict[str, list[str] | None] = dict.fromkeys((*single_names, *multi_names))
    flags = dict.fromkeys(option_names, False)
    unparsed: list[str] = []
    missing: list[str] = []
    current: str | None = None
    for word in arguments:
        if word in keywords:
            if current is not None and current in results and results[current] == []:
                missing.append(current)
            if word in flags:
                flags[word] = True
                current = None
            else:
                current = word
                if word in single_names or results[word] is None:
                    results[word] = []
            continue
        if current is None:
            unparsed.append(word)
        else:
            results[current].append(word)  # type: ignore[union-attr]
            if current in single_names:
                current = None
    if current is not None and results.get(current) == []:
        missing.append(current)
    for name, flag in flags.items():
        frame.scope.set(f"{prefix}_{name}", "TRUE" if flag else "FALSE")
    for name, values in results.items():
        if values:
            frame.scope.set(f"{prefix}_{name}", ";".join(values))
        else:
            frame.scope.unset(f"{prefix}_{name}")
    for name, values in (("UNPARSED_ARGUMENTS", unparsed), ("KEYWORDS_MISSING_VALUES", missing)):
        if values:
            frame.scope.set(f"{prefix}_{name}", ";".join(values))
        else:
            frame.scope.unset(f"{prefix}_{name}")


_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_INT64 = 1 << 64


def _int64(value: int) -> int:
    """Wrap to a signed 64-bit integer, as CMake's arithmetic does (and so `1 << 99999999`
    cannot build a huge Python integer)."""
    value %= _INT64
    return value - _INT64 if value >= _INT64 // 2 else value


def integer_expression(text: str) -> int | None:
    """math(EXPR)'s integer arithmetic (+ - * / % | & ^ ~ << >> and parentheses), or None."""
    # CMake's `/` is integer division; Python's `//` is the same for the non-negative case.
    try:
        tree = ast.parse(text.replace("/", "//"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return _int64(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            operand = value(node.operand)
            return _int64(
                -operand
                if isinstance(node.op, ast.USub)
                else (~operand if isinstance(node.op, ast.Invert) else operand)
            )
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, (ast.LShift, ast.RShift)):
                right &= 63
            return _int64(_ARITHMETIC[type(node.op)](left, right))
        raise ValueError(node)

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError, RecursionError):
        return None
