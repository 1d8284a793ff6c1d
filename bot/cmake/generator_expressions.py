"""Generator expressions (`$<...>`): the ones a profile decides, the rest kept as written.

Usage requirements keep the language a `$<COMPILE_LANGUAGE:...>` restricts them to, so the
helpers that evaluate one argument chunk per language live here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.cmake.budgets import MAX_NESTING, NestingTooDeep
from bot.cmake.profiles import CMakeProfile
from bot.cmake.values import is_false_value

if TYPE_CHECKING:  # state imports this module (through whole_archive)
    from bot.cmake.state import Item


@dataclass(frozen=True, slots=True)
class GenexContext:
    """What generator expressions may ask about: compiler, platform, and (for per-language
    usage requirements) the language being compiled; None where no language applies."""

    compiler_id: str
    platform: str
    cuda: bool
    language: str | None = None

    @staticmethod
    def of(profile: CMakeProfile, language: str | None = None) -> GenexContext:
        """What a profile answers, for `language` (None: any)."""
        return GenexContext(profile.compiler_id, profile.platform, profile.cuda, language)

    def compiler_for(self, language: str) -> str:
        """The compiler id for `language` (CUDA's is NVIDIA when a CUDA compiler was found)."""
        if language == "CUDA":
            return "NVIDIA" if self.cuda else ""
        return self.compiler_id


LANGUAGES = ("C", "CXX", "CUDA")


def evaluate_generator_expressions(text: str, context: GenexContext) -> str:
    """Evaluate the generator expressions in `text`; ones the model cannot decide stay as written.

    Evaluation recurses once per nesting level: past MAX_NESTING it raises NestingTooDeep.
    """
    if "$<" not in text:
        return text
    if _deepest(text) > MAX_NESTING:
        raise NestingTooDeep(f"generator expressions nested deeper than {MAX_NESTING}")
    return _evaluate(text, context)


def _deepest(text: str) -> int:
    """How deep `$<` nests in `text` (counted as _genex_end counts)."""
    depth = deepest = 0
    index = text.find("$<")
    while 0 <= index < len(text):
        if text.startswith("$<", index):
            depth += 1
            deepest = max(deepest, depth)
            index += 2
            continue
        if text[index] == ">" and depth:
            depth -= 1
        index += 1
    return deepest


def _evaluate(text: str, context: GenexContext) -> str:
    if "$<" not in text:
        return text
    parts: list[str] = []
    index = 0
    while True:
        start = text.find("$<", index)
        if start < 0:
            parts.append(text[index:])
            break
        parts.append(text[index:start])
        end = _genex_end(text, start)
        if end < 0:
            parts.append(text[start:])
            break
        parts.append(_evaluate_one_genex(text[start + 2 : end], context))
        index = end + 1
    return "".join(parts)


def _genex_end(text: str, start: int) -> int:
    """Index of the `>` closing the `$<` at `start`, or -1."""
    depth = 0
    index = start
    while index < len(text):
        if text.startswith("$<", index):
            depth += 1
            index += 2
            continue
        if text[index] == ">":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def split_top_level(text: str, separator: str, limit: int = -1) -> list[str]:
    """Split on `separator` outside nested `$<...>`."""
    parts: list[str] = []
    depth = 0
    current_start = 0
    index = 0
    while index < len(text):
        if text.startswith("$<", index):
            depth += 1
            index += 2
            continue
        char = text[index]
        if char == ">" and depth:
            depth -= 1
        elif char == separator and depth == 0 and (limit < 0 or len(parts) < limit):
            parts.append(text[current_start:index])
            current_start = index + 1
        index += 1
    parts.append(text[current_start:])
    return parts


def _evaluate_one_genex(content: str, context: GenexContext) -> str:
    head, *rest = split_top_level(content, ":", limit=1)
    name = _evaluate(head, context)
    argument = rest[0] if rest else None

    def verbatim() -> str:
        if argument is None:
            return f"$<{name}>"
        return f"$<{name}:{_evaluate(argument, context)}>"

    def arguments() -> list[str]:
        if argument is None:
            return []
        return [_evaluate(part, context) for part in split_top_level(argument, ",")]

    if name in ("0", "1") and argument is not None:
        return _evaluate(argument, context) if name == "1" else ""
    constants = {"ANGLE-R": ">", "COMMA": ",", "SEMICOLON": ";", "QUOTE": '"'}
    if name in constants and argument is None:
        return constants[name]
    if name in ("BUILD_INTERFACE", "BUILD_LOCAL_INTERFACE", "LINK_ONLY", "TARGET_NAME"):
        return _evaluate(argument or "", context)
    if name == "INSTALL_INTERFACE":
        return ""
    if name == "BOOL":
        value = _evaluate(argument or "", context)
        return verbatim() if "$<" in value else ("0" if is_false_value(value) else "1")
    if name == "NOT":
        value = _evaluate(argument or "", context)
        return {"0": "1", "1": "0"}.get(value, verbatim())
    if name in ("AND", "OR"):
        values = arguments()
        decisive, other = ("0", "1") if name == "AND" else ("1", "0")
        if decisive in values:
            return decisive
        return other if all(v == other for v in values) else verbatim()
    if name == "IF":
        values = arguments()
        if len(values) == 3 and values[0] in ("0", "1"):
            return values[1] if values[0] == "1" else values[2]
        return verbatim()
    if name in ("STREQUAL", "EQUAL"):
        values = arguments()
        if len(values) != 2 or any("$<" in v for v in values):
            return verbatim()
        if name == "STREQUAL":
            return "1" if values[0] == values[1] else "0"
        try:
            return "1" if int(values[0], 0) == int(values[1], 0) else "0"
        except ValueError:
            return verbatim()
    if name in ("LOWER_CASE", "UPPER_CASE"):
        value = _evaluate(argument or "", context)
        return value.lower() if name == "LOWER_CASE" else value.upper()
    compiler_languages = {"CXX_COMPILER_ID": "CXX", "C_COMPILER_ID": "C", "CUDA_COMPILER_ID": "CUDA"}
    if name in compiler_languages:
        compiler = context.compiler_for(compiler_languages[name])
        if argument is None:
            return compiler
        return "1" if compiler in arguments() else "0"
    if name == "PLATFORM_ID":
        if argument is None:
            return context.platform
        return "1" if context.platform in arguments() else "0"
    if name == "COMPILE_LANGUAGE":
        if context.language is None:
            return verbatim()
        if argument is None:
            return context.language
        return "1" if context.language in arguments() else "0"
    if name == "COMPILE_LANG_AND_ID":
        values = arguments()
        if context.language is None or not values:
            return verbatim()
        matches = values[0] == context.language and context.compiler_for(values[0]) in values[1:]
        return "1" if matches else "0"
    # TARGET_FILE, LINK_LIBRARY, CONFIG, TARGET_PROPERTY, ...: kept as text for the reader.
    return verbatim()


def is_language_dependent(text: str) -> bool:
    return "COMPILE_LANG" in text


def generator_expression_chunks(items: Sequence[Item]) -> list[tuple[str, int]]:
    """Join consecutive elements while a `$<` is still open; each chunk keeps its first line."""
    chunks: list[tuple[str, int]] = []
    pending: list[str] = []
    line = 0
    depth = 0
    for item in items:
        if not pending:
            line = item.line
        pending.append(item.value)
        depth = _genex_depth(item.value, depth)
        if depth == 0:
            chunks.append((";".join(pending), line))
            pending = []
    if pending:
        chunks.append((";".join(pending), line))
    return chunks


def _genex_depth(text: str, depth: int) -> int:
    """How many `$<` are still open after `text`, given `depth` open before it."""
    index = 0
    while index < len(text):
        if text.startswith("$<", index):
            depth += 1
            index += 2
            continue
        if text[index] == ">" and depth:
            depth -= 1
        index += 1
    return depth


def merge_languages(
    evaluated: Sequence[Sequence[str]], languages: Sequence[str | None]
) -> list[tuple[str, str | None]]:
    """Items from per-language evaluations; an item present for every language gets None."""
    if len(languages) == 1:
        return [(value, None) for value in evaluated[0]]
    order: dict[str, list[str]] = {}
    for language, values in zip(languages, evaluated, strict=True):
        for value in values:
            present = order.setdefault(value, [])
            if language not in present:
                present.append(language)  # type: ignore[arg-type]
    merged = []
    for value, present in order.items():
        merged.append((value, None if len(present) == len(languages) else ",".join(present)))
    return merged
