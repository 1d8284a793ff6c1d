"""Starlark syntax errors as the interpreter reports them, recovered statement by statement.

The interpreter (starlark-pyo3, the one that evaluates: bot/buck/evaluation.py) stops at a
file's first error; the text is repaired and parsed again to find the root error of each later
statement, and tree-sitter's placement (bot/buck/syntax.py) is kept where it says more. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import starlark as sl

_DIALECT = sl.Dialect.extended()  # the evaluator's dialect (bot/buck/evaluation.py)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """One syntax error: where (1-based line and column) and what was expected or unexpected."""

    line: int
    column: int
    message: str


def interpreter_error(text: str) -> SyntaxProblem | None:
    """The interpreter's first error, or None when it accepts the file."""
    try:
        sl.parse("BUCK", text, _DIALECT)
    except sl.StarlarkError as error:
        message = str(error)
        where = re.search(r"--> [^\n]*?:(\d+):(\d+)", message)
        first = next((row.strip() for row in message.splitlines() if row.strip()), "does not parse")
        first = re.sub(r"^error:\s*(?:Parse error:\s*)?", "", first)
        line, column = (int(where.group(1)), int(where.group(2))) if where else (0, 0)
        if not re.search(rf"^\s*{line} \|", message, re.M):
            line = column = 0  # at the end of the file the interpreter points at 1:1, showing no line
        return SyntaxProblem(line, column, _shortened(first))
    return None


def _shortened(message: str) -> str:
    """An 'expected one of' list of every operator says nothing: keep the unexpected part."""
    head, sep, expected = message.partition(", expected one of ")
    if sep and expected.count(",") > 6:
        return head.replace(" here", "")
    return message


MAX_SYNTAX_ERRORS = 20  # a file with more is reported by its first twenty
# A token an expression can start with: a missing comma before it is the likely root error.
_EXPRESSION_START = re.compile(r"""[A-Za-z0-9_"'\[({]""")


def root_errors(text: str, first: SyntaxProblem, located: list[SyntaxProblem]) -> tuple[SyntaxProblem, ...]:
    """The root error of each statement, each where the interpreter places it.

    After an error the text is repaired and parsed again, so the next error found is one the
    interpreter would report on its own: a comma inserted where one is missing before an
    expression (when that gets the parse past the token), else the statement holding the error
    blanked out. Recovery never invents errors on valid lines after a broken one. Columns are
    given in the original text (each inserted comma shifts its line by two). Where tree-sitter
    placed a problem on the same line, at or before that place and after the previous error
    (`located`: "`srcs =` has no value" where the interpreter sees only the `)`), its wording
    and place are kept: it says what was expected.
    """
    problems = [first]
    current = text
    problem = first  # in `current`'s coordinates
    inserted: dict[int, list[int]] = {}  # line -> columns (in `current`) where ", " went in
    while len(problems) < MAX_SYNTAX_ERRORS:
        repaired = _with_comma(current, problem)
        following = interpreter_error(repaired) if repaired is not None else None
        if repaired is not None and _past(following, problem, shift=2):
            current = repaired
            inserted.setdefault(problem.line, []).append(problem.column)
        else:
            current = _blanked(current, problem.line)
            following = interpreter_error(current)
        if following is None or following.line == 0 or not _past(following, problem, shift=0):
            break
        shift = 2 * sum(1 for column in inserted.get(following.line, ()) if column <= following.column)
        line, column = following.line, following.column - shift
        previous = (problems[-1].line, problems[-1].column)
        closer = [p for p in located if p.line == line and previous < (p.line, p.column) <= (line, column)]
        problems.append(
            min(closer, key=lambda p: p.column) if closer else SyntaxProblem(line, column, following.message)
        )
        problem = following
    return tuple(problems)


def _past(later: SyntaxProblem | None, problem: SyntaxProblem, shift: int) -> bool:
    """Is `later` (from a text with `shift` characters inserted at `problem`) beyond `problem`?"""
    if later is None:
        return True
    if later.line == 0:
        return False
    column = later.column - shift if later.line == problem.line else later.column
    return (later.line, column) > (problem.line, problem.column)


def _with_comma(text: str, problem: SyntaxProblem) -> str | None:
    """The text with `, ` inserted before the unexpected token, when an expression starts there."""
    lines = text.split("\n")
    if not 0 < problem.line <= len(lines):
        return None
    line = lines[problem.line - 1]
    at = problem.column - 1
    if not 0 <= at < len(line) or not _EXPRESSION_START.match(line[at]):
        return None
    lines[problem.line - 1] = line[:at] + ", " + line[at:]
    return "\n".join(lines)


def _blanked(text: str, line_number: int) -> str:
    """The text with the top-level statement holding `line_number` replaced by empty lines."""
    lines = text.split("\n")

    def starts_statement(line: str) -> bool:
        return bool(line) and not line[0].isspace() and line[0] not in ")]}#"

    start = line_number - 1
    while start > 0 and not starts_statement(lines[start]):
        start -= 1
    end = line_number
    while end < len(lines) and not starts_statement(lines[end]):
        end += 1
    return "\n".join(lines[:start] + [""] * (end - start) + lines[end:])


def merged_errors(first: SyntaxProblem, found: list[SyntaxProblem], index_lines: int) -> tuple[SyntaxProblem, ...]:
    """The interpreter's error, then tree-sitter's after it: the text before the interpreter's
    error is a valid Starlark prefix, so what tree-sitter places there or on that line is the
    same error placed elsewhere by recovery."""
    if first.line == 0:  # the interpreter ran out of text: tree-sitter knows where it broke
        if not found:
            return (SyntaxProblem(max(1, index_lines), 1, f"unexpected end of file: {first.message}"),)
        first, found = min(found, key=lambda p: (p.line, p.column)), found
    later = {(p.line, p.column): p for p in found if p.line > first.line}
    by_line: dict[int, SyntaxProblem] = {}
    for problem in sorted(later.values(), key=lambda p: (p.line, p.column)):
        by_line.setdefault(problem.line, problem)  # one error a line: recovery cascades within it
    return (first, *by_line.values())
