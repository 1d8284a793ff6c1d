"""An `if()` tests a keyword of `execute_process` instead of the variable that keyword names.

`execute_process(... RESULT_VARIABLE SYSCONFIG_RESULT)` stores the exit status in
`SYSCONFIG_RESULT`; `RESULT_VARIABLE` itself is only a keyword, never set. `if(RESULT_VARIABLE
EQUAL 0)` therefore compares the string "RESULT_VARIABLE" with 0: always false, whatever the
command did. In ExecuTorch's installed wheel package config the `else()` branch is a
`FATAL_ERROR`, so every consumer's `find_package(executorch)` failed (b3932c028d, fixed in
a17b59b24c by testing `SYSCONFIG_RESULT`).

Reported: in any CMake file (a package config included), an `if`/`elseif`/`while` argument that
is, unquoted, one of `execute_process`'s output keywords (`RESULT_VARIABLE`, `RESULTS_VARIABLE`,
`OUTPUT_VARIABLE`, `ERROR_VARIABLE`) when an `execute_process` of the same file uses that
keyword and no other command of the file names it (it might set a variable of that name).

Example (bad): `if(RESULT_VARIABLE EQUAL 0)` after `execute_process(... RESULT_VARIABLE
SYSCONFIG_RESULT)`.

Use instead: the variable the keyword names, `if(SYSCONFIG_RESULT EQUAL 0)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.check import CMAKE_FILES, Check, Example
from bot.cmake.syntax import CMakeFile
from bot.facts import package_configs
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot

_KEYWORDS = ("RESULT_VARIABLE", "RESULTS_VARIABLE", "OUTPUT_VARIABLE", "ERROR_VARIABLE")
_TESTS = ("if", "elseif", "while")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for path in package_configs.cmake_files(snap.head):
        parsed = package_configs.parsed(snap.head, path)
        if parsed is None or parsed.problems:
            continue
        yield from _misuses(snap, parsed)


def _misuses(snap: Snapshot, parsed: CMakeFile) -> Iterator[Hit]:
    named: dict[str, tuple[str, int]] = {}  # keyword -> (variable, line) of the latest execute_process
    # A name any other command takes as an argument may be a variable the file sets itself.
    assigned = {
        arg.text
        for command in parsed.commands
        if command.name not in ("execute_process", *_TESTS)
        for arg in command.args
    }
    for command in parsed.commands:
        if command.name == "execute_process":
            for index, arg in enumerate(command.args[:-1]):
                if arg.text in _KEYWORDS and not arg.quoted:
                    named[arg.text] = (command.args[index + 1].text, command.line)
        elif command.name in _TESTS:
            for arg in command.args:
                if arg.quoted or arg.text not in named or arg.text in assigned:
                    continue
                variable, line = named[arg.text]
                yield _hit(snap, parsed.path, arg.line, arg.text, variable, line)


def _hit(snap: Snapshot, path: str, line: int, keyword: str, variable: str, process_line: int) -> Hit:
    return Hit(
        path=path,
        line=line,
        message=(
            f"This tests `{keyword}`, a keyword of `execute_process` that is never set, not the variable it names: "
            f"the `execute_process` at line {process_line} stores its value in `{variable}`. The condition reads the "
            f"string `{keyword}` and never what the command did. Test `{variable}`."
        ),
        key=f"{path}|{keyword}",
        target=keyword,
        offending_text=keyword,
        evidence=(
            Evidence(path, line, f"tests `{keyword}`"),
            Evidence(path, process_line, f"`execute_process` stores it in `{variable}`"),
        ),
        fix=_use_variable(snap, path, line, keyword, variable),
    )


def _use_variable(snap: Snapshot, path: str, line: int, keyword: str, variable: str) -> Fix | None:
    text = snap.head.text(path) or ""
    lines = text.split("\n")
    if line > len(lines) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
        return None
    changed = re.sub(rf"(?<![\w$\"{{]){keyword}(?![\w}}\"])", variable, lines[line - 1], count=1)
    return fix_between(path, text, "\n".join([*lines[: line - 1], changed, *lines[line:]]), f"test `{variable}`")


_CONFIG = (
    "execute_process(\n"
    "  COMMAND ${{PYTHON_EXECUTABLE}} -c \"import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))\"\n"
    "  OUTPUT_VARIABLE EXT_SUFFIX\n"
    "  RESULT_VARIABLE SYSCONFIG_RESULT\n"
    "  ERROR_VARIABLE SYSCONFIG_ERROR\n"
    ")\n"
    "if({test} EQUAL 0)\n"
    '  message(STATUS "Sysconfig extension suffix: ${{EXT_SUFFIX}}")\n'
    "else()\n"
    '  message(FATAL_ERROR "Failed to retrieve EXT_SUFFIX: ${{SYSCONFIG_ERROR}}")\n'
    "endif()\n"
)
_PATH = "tools/cmake/executorch-wheel-config.cmake"

CHECK = Check(
    id="cmake-keyword-tested-as-variable",
    inputs=(*CMAKE_FILES, ".cmake.in"),
    severity=Severity.MAJOR,
    title="CMake condition tests an execute_process keyword instead of the variable it names",
    fixable=True,
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={_PATH: _CONFIG.format(test="RESULT_VARIABLE  # expect: cmake-keyword-tested-as-variable\n")},
            fixed={_PATH: _CONFIG.format(test="SYSCONFIG_RESULT  # expect: cmake-keyword-tested-as-variable\n")},
        ),
    ),
    good=(
        Example(head={_PATH: _CONFIG.format(test="SYSCONFIG_RESULT")}),
        # A variable of that name the file sets itself, and the keyword quoted as a string.
        Example(head={_PATH: "set(RESULT_VARIABLE 0)\n" + _CONFIG.format(test="RESULT_VARIABLE")}),
        Example(head={_PATH: _CONFIG.format(test='"RESULT_VARIABLE" STREQUAL "" OR SYSCONFIG_RESULT')}),
    ),
)
