"""Usage requirements: target_link_libraries and the other target_* commands, add_definitions & co."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.cmake.generator_expressions import (
    LANGUAGES,
    GenexContext,
    evaluate_generator_expressions,
    generator_expression_chunks,
    is_language_dependent,
    merge_languages,
)
from bot.cmake.model import Scoped
from bot.cmake.state import Frame, Item, join_conditions, place
from bot.cmake.syntax import Command
from bot.cmake.values import split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation

SCOPE_KEYWORDS = {
    "PUBLIC": "PUBLIC",
    "PRIVATE": "PRIVATE",
    "INTERFACE": "INTERFACE",
    "LINK_PUBLIC": "PUBLIC",
    "LINK_PRIVATE": "PRIVATE",
    "LINK_INTERFACE_LIBRARIES": "INTERFACE",
}


def usage_items(
    ev: Evaluation,
    items: Sequence[Item],
    scope: str,
    command: Command,
    frame: Frame,
    per_language: bool,
    transform: Callable[[str], str | None] = lambda value: value,
) -> list[Scoped]:
    """Evaluate generator expressions over one scope group and make Scoped values.

    A generator expression may span list elements (`$<cond:-a;-b>` written unquoted
    across arguments), so elements are chunked until every `$<` is closed.
    """
    path, call_line, via = place(command, frame)
    condition = join_conditions(frame.conditions)
    results: list[Scoped] = []
    for chunk_text, line in generator_expression_chunks(items):
        line = call_line if frame.call_sites else line
        languages: Sequence[str | None]
        if per_language and is_language_dependent(chunk_text):
            languages = LANGUAGES
        else:
            languages = (None,)
        evaluated = [
            list(split_list(evaluate_generator_expressions(chunk_text, GenexContext.of(ev.profile, lang))))
            for lang in languages
        ]
        for value, value_languages in merge_languages(evaluated, languages):
            transformed = transform(value)
            if transformed:
                results.append(Scoped(transformed, scope, path, line, condition, value_languages, via))
    return results


def target_usage(field_name: str) -> Callable[[Evaluation, Command, Frame], None]:
    """The handler of target_<field_name>(): items grouped by PUBLIC/PRIVATE/INTERFACE."""
    per_language = field_name in ("compile_definitions", "compile_options", "include_directories")

    def handler(ev: Evaluation, command: Command, frame: Frame) -> None:
        items = ev.expand_items(command.args, frame)
        if not items:
            return
        target = ev.target(items[0].value, command)
        if target is None:
            return
        default_scope = "PUBLIC" if field_name == "link_libraries" else "PRIVATE"
        if target.kind == "INTERFACE_LIBRARY":
            default_scope = "INTERFACE"
        groups = _scope_groups(items[1:], default_scope)
        transform = usage_transform(ev, field_name, frame)
        collected = getattr(target, field_name)
        for scope, group in groups:
            collected.extend(usage_items(ev, group, scope, command, frame, per_language, transform))

    return handler


def usage_transform(ev: Evaluation, field_name: str, frame: Frame) -> Callable[[str], str | None]:
    """What an item of `field_name` becomes (-D dropped, directories resolved); None drops it."""
    if field_name == "compile_definitions":
        return lambda value: value[2:] if value.startswith("-D") else value
    if field_name == "include_directories":
        return lambda value: ev.resolve(value, frame) if not value.startswith("$<") else value
    if field_name == "link_libraries":
        skip = {"debug", "optimized", "general"}
        return lambda value: None if value in skip else value
    return lambda value: value


def directory_usage(field_name: str) -> Callable[[Evaluation, Command, Frame], None]:
    """The handler of a directory command (add_definitions, include_directories, ...)."""

    def handler(ev: Evaluation, command: Command, frame: Frame) -> None:
        items = ev.expand_items(command.args, frame)
        if command.name == "include_directories":
            items = [i for i in items if i.value not in ("AFTER", "BEFORE", "SYSTEM")]
        if command.name == "add_definitions":
            # add_definitions takes flags: -D goes to definitions, the rest to options.
            definitions = [i for i in items if re.match(r"^[-/]D", i.value)]
            others = [i for i in items if not re.match(r"^[-/]D", i.value)]
            frame.directory.compile_definitions.extend(
                usage_items(ev, definitions, "PRIVATE", command, frame, True, lambda v: v[2:])
            )
            frame.directory.compile_options.extend(usage_items(ev, others, "PRIVATE", command, frame, True))
            return
        transform = usage_transform(ev, field_name, frame)
        getattr(frame.directory, field_name).extend(
            usage_items(ev, items, "PRIVATE", command, frame, field_name != "link_libraries", transform)
        )

    return handler


def _scope_groups(items: Sequence[Item], default_scope: str) -> list[tuple[str, list[Item]]]:
    """Split target_* arguments at PUBLIC/PRIVATE/INTERFACE (and the legacy LINK_* keywords)."""
    groups: list[tuple[str, list[Item]]] = []
    scope = default_scope
    current: list[Item] = []
    for item in items:
        if item.value in SCOPE_KEYWORDS:
            if current:
                groups.append((scope, current))
            scope, current = SCOPE_KEYWORDS[item.value], []
        elif item.value in ("BEFORE", "AFTER", "SYSTEM") and not current:
            continue
        else:
            current.append(item)
    if current:
        groups.append((scope, current))
    return groups
