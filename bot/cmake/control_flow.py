"""Control flow: if/elseif/else, foreach and while, block, function and macro definitions and calls.

Each function takes the running Evaluation; the loop in bot/cmake/interpreter.py hands it the
block's opener, and the block's end comes from the file's structure (bot/cmake/blocks.py).
"""

from __future__ import annotations

import dataclasses
import posixpath
from typing import TYPE_CHECKING

from bot.cmake.blocks import Program
from bot.cmake.budgets import MAX_DEPTH, MAX_LOOP_ITERATIONS
from bot.cmake.conditions import condition
from bot.cmake.model import SOURCE_ROOT
from bot.cmake.state import Definition, Flow, Frame, Scope, condition_text, negate
from bot.cmake.syntax import Command
from bot.cmake.values import split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def run_if(ev: Evaluation, program: Program, index: int, frame: Frame) -> Flow:
    """The first branch whose condition holds, run under that condition (and the negated earlier ones)."""
    commands = program.file.commands
    branch_starts = program.branches[index]
    end = program.ends[index]
    for position, branch in enumerate(branch_starts):
        command = commands[branch]
        if command.name != "else" and not condition(ev, command, frame):
            continue
        # Texts are only built for the branch taken: most if()s in helpers are not.
        parts = [negate(_condition_text(ev, commands[b], frame)) for b in branch_starts[:position]]
        if command.name != "else":
            parts.append(_condition_text(ev, command, frame))
        stop = branch_starts[position + 1] if position + 1 < len(branch_starts) else end
        inner = dataclasses.replace(frame, conditions=(*frame.conditions, *parts))
        return ev.run(program, branch + 1, stop, inner)
    return Flow.NEXT


def _condition_text(ev: Evaluation, command: Command, frame: Frame) -> str:
    """The condition as written, with a macro's parameters filled in."""
    if frame.macro_arguments is None:
        return condition_text(command.args)
    return condition_text([dataclasses.replace(a, text=ev.raw_text(a, frame)) for a in command.args])


def run_loop(ev: Evaluation, program: Program, index: int, frame: Frame) -> Flow:
    """foreach() or while(); while() stops (and is reported) after MAX_LOOP_ITERATIONS."""
    command = program.file.commands[index]
    start, end = index + 1, program.ends[index]
    if command.name == "while":
        for _ in range(MAX_LOOP_ITERATIONS):
            ev.current = command
            if not condition(ev, command, frame):
                return Flow.NEXT
            flow = ev.run(program, start, end, frame)
            if flow is Flow.BREAK:
                return Flow.NEXT
            if flow is Flow.RETURN:
                return flow
        ev.limit(command.path, command.line, f"while() still running after {MAX_LOOP_ITERATIONS} iterations; stopped")
        return Flow.NEXT
    values = ev.expand(command.args, frame)
    if not values:
        return Flow.NEXT
    if "ZIP_LISTS" in values and "IN" in values and values.index("IN") < values.index("ZIP_LISTS"):
        variables, rows = _zipped_items(ev, values, frame)
    else:
        variables, rows = [values[0]], [[item] for item in _foreach_items(ev, values[1:], command, frame)]
    saved = {variable: frame.scope.own.get(variable) for variable in variables}
    try:
        for row in rows:
            for variable, item in zip(variables, row, strict=True):
                frame.scope.set(variable, item)
            flow = ev.run(program, start, end, frame)
            if flow is Flow.BREAK:
                break
            if flow is Flow.RETURN:
                return flow
    finally:
        # Since CMake 3.21 the loop variables are restored after the loop.
        for variable, value in saved.items():
            if value is None:
                frame.scope.own.pop(variable, None)
            else:
                frame.scope.own[variable] = value
    return Flow.NEXT


def _zipped_items(ev: Evaluation, values: list[str], frame: Frame) -> tuple[list[str], list[list[str]]]:
    """foreach(<var>... IN ZIP_LISTS <list>...): one variable per list (one loop variable names them
    <var>_0, <var>_1, ...); as many iterations as the longest list, shorter ones giving ""."""
    names = values[: values.index("IN")]
    lists = [split_list(ev.lookup(frame, "", name)) for name in values[values.index("ZIP_LISTS") + 1 :]]
    variables = [f"{names[0]}_{index}" for index in range(len(lists))] if len(names) == 1 else names
    if len(variables) != len(lists):
        return [], []
    longest = min(max((len(items) for items in lists), default=0), MAX_LOOP_ITERATIONS)
    return variables, [[items[i] if i < len(items) else "" for items in lists] for i in range(longest)]


def _foreach_items(ev: Evaluation, rest: list[str], command: Command, frame: Frame) -> list[str]:
    if rest[:1] == ["RANGE"]:
        try:
            numbers = [int(v) for v in rest[1:4]]
        except ValueError:
            ev.problem(command, "foreach(RANGE) with a non-integer")
            return []
        start, stop, step = (
            (0, numbers[0], 1) if len(numbers) == 1 else (*numbers[:2], numbers[2] if len(numbers) > 2 else 1)
        )
        if step <= 0 or (stop - start) // step > MAX_LOOP_ITERATIONS:
            ev.limit(command.path, command.line, "foreach(RANGE) too long; skipped")
            return []
        return [str(v) for v in range(start, stop + 1, step)]
    if rest[:1] == ["IN"]:
        items: list[str] = []
        mode = None
        for word in rest[1:]:
            if word in ("LISTS", "ITEMS", "ZIP_LISTS"):
                mode = word
            elif mode == "LISTS":
                items.extend(split_list(ev.lookup(frame, "", word)))
            elif mode == "ITEMS":
                items.append(word)
        return items
    return rest


def run_block(ev: Evaluation, program: Program, index: int, frame: Frame) -> Flow:
    """block(): a child scope; PROPAGATE copies the named variables back out."""
    command = program.file.commands[index]
    values = ev.expand(command.args, frame)
    propagate = values[values.index("PROPAGATE") + 1 :] if "PROPAGATE" in values else []
    scope = Scope(frame.scope)
    flow = ev.run(program, index + 1, program.ends[index], dataclasses.replace(frame, scope=scope))
    for name in propagate:
        entry = scope.get(name)
        if entry is None:
            frame.scope.unset(name)
        else:
            frame.scope.set(name, *entry)
    return flow


def run_return(ev: Evaluation, command: Command, frame: Frame) -> None:
    """return(PROPAGATE ...): the named variables into the caller's scope."""
    values = ev.expand(command.args, frame)
    if values[:1] == ["PROPAGATE"] and frame.scope.parent is not None:
        for name in values[1:]:
            entry = frame.scope.get(name)
            if entry is None:
                frame.scope.parent.unset(name)
            else:
                frame.scope.parent.set(name, *entry)


def define(ev: Evaluation, program: Program, index: int, frame: Frame) -> None:
    """function() or macro(): remember the body; nothing runs until a call."""
    command = program.file.commands[index]
    values = ev.expand(command.args, frame)
    if not values:
        return
    ev.callables[values[0].lower()] = Definition(
        values[0].lower(),
        tuple(values[1:]),
        command.name == "macro",
        program,
        index + 1,
        program.ends[index],
        command.path,
    )


def call(ev: Evaluation, definition: Definition, command: Command, frame: Frame) -> Flow:
    """A call of a function (own scope) or macro (the caller's scope, parameters substituted)."""
    if ev.depth >= MAX_DEPTH:
        ev.limit(command.path, command.line, f"calls nested deeper than {MAX_DEPTH} at {definition.name}()")
        return Flow.NEXT
    values = ev.expand(command.args, frame)
    arguments = {
        "ARGC": str(len(values)),
        "ARGV": ";".join(values),
        "ARGN": ";".join(values[len(definition.parameters) :]),
        **{f"ARGV{i}": v for i, v in enumerate(values)},
        **{p: (values[i] if i < len(values) else "") for i, p in enumerate(definition.parameters)},
    }
    call_sites = (*frame.call_sites, (command.path, command.line))
    ev.depth += 1
    try:
        if definition.is_macro:
            inner = dataclasses.replace(frame, call_sites=call_sites, macro_arguments=arguments)
            return ev.run(definition.program, definition.body_start, definition.body_end, inner)
        scope = Scope(frame.scope)
        for name, value in arguments.items():
            scope.set(name, value)
        scope.set("CMAKE_CURRENT_FUNCTION", definition.name)
        scope.set("CMAKE_CURRENT_FUNCTION_LIST_FILE", posixpath.join(SOURCE_ROOT, definition.path))
        scope.set(
            "CMAKE_CURRENT_FUNCTION_LIST_DIR",
            posixpath.join(SOURCE_ROOT, posixpath.dirname(definition.path)).rstrip("/"),
        )
        inner = Frame(scope, frame.directory, frame.conditions, call_sites)
        ev.run(definition.program, definition.body_start, definition.body_end, inner)
        return Flow.NEXT
    finally:
        ev.depth -= 1
