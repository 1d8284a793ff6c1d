"""Who is to blame for a failed or wrong program run: the definition the diff changed, by evidence.

The evidence is what the run printed (runtime_errors.py: the shim whose call failed, the file:line of
the check that failed, the CUDA error) and what the program's wrapper calls (its undefined aoti_torch_*
symbols, each defined by one object of the shim library, `.cpp` and `.cu` alike). The diff says which
lines changed; the tree says which function each changed line lies in. A culprit is the first changed
line of the most specific place the evidence points at:

1. an error log line's file:line: the changed lines of the function around that line, else the line;
2. the shim whose call failed: the changed lines of its definition, else of the file defining it;
3. for a wrong value (no error at all): the changed lines of a shim the program calls, else of the
   file defining one (a kernel the shim launches), else of any function the diff changes in the
   backend's sources, else of the backend's Python that exported the program (a Triton kernel built
   into it, a pass), each said as such.
A place outside the diff is said so (in_diff False), never dressed up as the pull request's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from smoke.runtime_errors import RuntimeErrors

HUNK = re.compile(r"^@@ -(?P<old>\d+)(?:,\d+)? \+(?P<new>\d+)(?:,(?P<count>\d+))? @@")
CALL = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\s*\(")
AFTER_PARAMETERS = re.compile(r"\s*(?:const|noexcept|override|final|->\s*[\w:<>*&\s]+?)?\s*\{")
NOT_FUNCTIONS = frozenset(
    ("if", "for", "while", "switch", "return", "sizeof", "catch", "defined", "decltype", "alignof", "static_assert")
)
SOURCE_SUFFIXES = (".cpp", ".cc", ".cu", ".c", ".h", ".cuh", ".hpp")
BACKEND_DIRECTORIES = ("backends/cuda/", "backends/aoti/")


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    start: int  # the line of its name
    end: int  # the line of its closing brace


@dataclass(frozen=True, slots=True)
class Culprit:
    path: str
    line: int
    function: str | None
    in_diff: bool
    why: str  # the evidence, in words: what points here

    def place(self) -> str:
        inside = f" (in {self.function})" if self.function else ""
        return f"{self.path}:{self.line}{inside}"


def changed_lines(diff_text: str) -> dict[str, frozenset[int]]:
    """Per head path, the lines the diff adds, and for a pure deletion the head line where it was."""
    found: dict[str, set[int]] = {}
    path: str | None = None
    number = 0
    deleting = False
    for row in diff_text.splitlines():
        if row.startswith("+++ "):
            target = row[4:].strip().split("\t")[0]
            path = None if target == "/dev/null" else target.removeprefix("b/")
            continue
        match = HUNK.match(row)
        if match:
            number, deleting = int(match.group("new")), False
            continue
        if path is None or row.startswith(("--- ", "diff ", "index ")):
            continue
        if row.startswith("+"):
            found.setdefault(path, set()).add(number)
            number, deleting = number + 1, False
        elif row.startswith("-"):
            if not deleting:
                found.setdefault(path, set()).add(max(number, 1))
            deleting = True
        elif row.startswith(" "):
            number, deleting = number + 1, False
    return {name: frozenset(lines) for name, lines in found.items()}


def functions_of(text: str) -> tuple[Function, ...]:
    """Every function definition in C++/CUDA text with its line span (comments and strings ignored)."""
    code = _blank_comments_and_strings(text)
    starts = [0]
    for index, character in enumerate(code):
        if character == "\n":
            starts.append(index + 1)
    found = []
    for match in CALL.finditer(code):
        if match.group("name") in NOT_FUNCTIONS:
            continue
        close = _matching(code, match.end() - 1, "(", ")")
        if close is None:
            continue
        body = AFTER_PARAMETERS.match(code, close + 1)
        if body is None:
            continue
        end = _matching(code, body.end() - 1, "{", "}")
        if end is None:
            continue
        found.append(Function(match.group("name"), _line_of(starts, match.start()), _line_of(starts, end)))
    return tuple(found)


def enclosing(functions: tuple[Function, ...], line: int) -> Function | None:
    """The innermost function whose span holds line."""
    holding = [item for item in functions if item.start <= line <= item.end]
    return min(holding, key=lambda item: item.end - item.start, default=None)


class Tree:
    """The head checkout's sources, read once each."""

    def __init__(self, checkout: Path | None) -> None:
        self.checkout = checkout
        self._functions: dict[str, tuple[Function, ...]] = {}

    def functions(self, path: str) -> tuple[Function, ...]:
        if path not in self._functions:
            file = self.checkout / path if self.checkout is not None else None
            text = file.read_text(errors="replace") if file is not None and file.is_file() else ""
            self._functions[path] = functions_of(text)
        return self._functions[path]

    def text(self, path: str) -> str:
        file = self.checkout / path if self.checkout is not None else None
        return file.read_text(errors="replace") if file is not None and file.is_file() else ""

    def definition(self, path: str, name: str) -> Function | None:
        return next((item for item in self.functions(path) if item.name == name), None)


def blame_failure(
    errors: RuntimeErrors, definitions: dict[str, str], changed: dict[str, frozenset[int]], tree: Tree
) -> Culprit | None:
    """A failed run: the changed line its own error lines point at. definitions: shim -> defining source."""
    for place in errors.places:
        for path in _paths_named(place.file, changed, definitions):
            function = enclosing(tree.functions(path), place.line)
            lines = _lines_in(changed.get(path, frozenset()), function) if function else frozenset()
            if lines:
                return Culprit(
                    path,
                    min(lines),
                    function.name if function else None,
                    True,
                    f"the check that failed is at {path}:{place.line} ({place.message[:160]})",
                )
            if place.line in changed.get(path, ()):
                return Culprit(
                    path,
                    place.line,
                    function.name if function else None,
                    True,
                    f"the check that failed, {place.message[:160]}, is on a line this pull request changes",
                )
    for shim in errors.failed_shims:
        source = definitions.get(shim)
        if source is None:
            continue
        found = _changed_for_shim(shim, source, changed, tree, f"the wrapper's call to {shim} failed")
        if found:
            return found
    return None


def blame_wrong_result(called: dict[str, str], changed: dict[str, frozenset[int]], tree: Tree) -> Culprit | None:
    """A run that ended well with wrong values: the changed code of what the program calls. called: shim ->
    defining source, for each shim the wrapper calls."""
    for shim, source in sorted(called.items(), key=lambda item: (item[1], item[0])):
        function = tree.definition(source, shim)
        lines = _lines_in(changed.get(source, frozenset()), function) if function else frozenset()
        if lines:
            return Culprit(
                source, min(lines), shim, True, f"the program calls {shim}, whose definition this pull request changes"
            )
    for shim, source in sorted(called.items(), key=lambda item: (item[1], item[0])):
        found = _changed_for_shim(shim, source, changed, tree, f"the program calls {shim}")
        if found:
            return found
    # A header or helper the shims include: the changed code nearest to them, said as such.
    for path, function, line in changed_definitions(changed, tree):
        if path.endswith((".h", ".cuh", ".hpp")) or function != "(outside any function)":
            return Culprit(
                path,
                line,
                None if function.startswith("(") else function,
                True,
                f"no shim the program calls is changed; this pull request changes {function} in {path}",
            )
    return blame_exporter(changed, tree)


def blame_exporter(changed: dict[str, frozenset[int]], tree: Tree) -> Culprit | None:
    """A wrong value whose native code is unchanged: the backend's Python that exported the program
    (the partitioner, the passes, a Triton kernel compiled into the program) is the pull request's, so
    its first changed function is the place, said as such. Tests are not exporter code."""
    for path, lines in sorted(changed.items()):
        if not path.startswith(BACKEND_DIRECTORIES) or not path.endswith(".py") or is_test(path):
            continue
        line = min(lines)
        function = python_function_at(tree.text(path), line)
        inside = f"{function} in {path}" if function else path
        return Culprit(
            path,
            line,
            function,
            True,
            f"no native code the program runs is changed; the program was exported with this pull "
            f"request's backend Python, which changes {inside}",
        )
    return None


def python_function_at(text: str, line: int) -> str | None:
    """The innermost def (as Class.name or name) whose span holds line in Python text; None outside."""
    import ast

    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    best: tuple[int, str] | None = None

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                end = child.end_lineno or child.lineno
                inside = child.lineno <= line <= end and not isinstance(child, ast.ClassDef)
                if inside and (best is None or end - child.lineno < best[0]):
                    best = (end - child.lineno, name)
                visit(child, f"{name}.")

    visit(module, "")
    return best[1] if best else None


def changed_definitions(changed: dict[str, frozenset[int]], tree: Tree) -> list[tuple[str, str, int]]:
    """(path, function, first changed line) for each function of the backend's sources the diff changes."""
    found = []
    for path, lines in sorted(changed.items()):
        if not path.startswith(BACKEND_DIRECTORIES) or not path.endswith(SOURCE_SUFFIXES) or is_test(path):
            continue
        seen: dict[str, int] = {}
        for line in sorted(lines):
            function = enclosing(tree.functions(path), line)
            name = function.name if function else "(outside any function)"
            seen.setdefault(name, line)
        found += [(path, name, line) for name, line in seen.items()]
    return found


def is_test(path: str) -> bool:
    """A backend's own tests (runtime/test/, shims/tests/, tests/): no exported program runs them."""
    return "/test/" in path or "/tests/" in path


def _changed_for_shim(
    shim: str, source: str, changed: dict[str, frozenset[int]], tree: Tree, evidence: str
) -> Culprit | None:
    lines = changed.get(source, frozenset())
    function = tree.definition(source, shim)
    inside = _lines_in(lines, function) if function else frozenset()
    if inside:
        return Culprit(source, min(inside), shim, True, f"{evidence}; this pull request changes its definition")
    if lines:
        line = min(lines)
        other = enclosing(tree.functions(source), line)
        return Culprit(
            source,
            line,
            other.name if other else None,
            True,
            f"{evidence}; {shim} is defined in {source}, where this pull request changes "
            f"{other.name if other else 'this line'}",
        )
    return None


def _paths_named(file: str, changed: dict[str, frozenset[int]], definitions: dict[str, str]) -> list[str]:
    """Repository paths whose base name is the log's file: the changed ones first."""
    name = file.rsplit("/", 1)[-1]
    candidates = [path for path in changed if path.rsplit("/", 1)[-1] == name]
    candidates += sorted({path for path in definitions.values() if path.rsplit("/", 1)[-1] == name} - set(candidates))
    return candidates


def _lines_in(lines: frozenset[int], function: Function | None) -> frozenset[int]:
    if function is None:
        return frozenset()
    return frozenset(line for line in lines if function.start <= line <= function.end)


def _matching(code: str, index: int, opening: str, closing: str) -> int | None:
    depth = 0
    for position in range(index, len(code)):
        if code[position] == opening:
            depth += 1
        elif code[position] == closing:
            depth -= 1
            if depth == 0:
                return position
    return None


def _line_of(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low + 1


def _blank_comments_and_strings(text: str) -> str:
    """The text with comments, string and character literals replaced by spaces (newlines kept)."""

    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
    return pattern.sub(blank, text)
