"""execute_process(): nothing runs, except the one command shape whose output the model can compute.

ExecuTorch's CMake takes its source lists (`_executorch_core__srcs`, `_extension_tensor__srcs`, ...) from
`shim_et/xplat/executorch/build/build_variables.bzl`, a file that is valid Starlark and Python, by running
(tools/cmake/Codegen.cmake, executorch_append_filelist)

    ${PYTHON_EXECUTABLE} -c "exec(open('<file>').read());print(';'.join(<NAME>))"

The model never runs a process. For exactly this shape it evaluates `<file>` from the tree with a
Starlark interpreter (starlark-pyo3: no I/O, no imports, bounded in time and call depth) and prints the
list `<NAME>` joined as the script would. Any other command succeeds with empty output, as before, so a
script takes its usual path; the commands not run are listed in `CMakeModel.processes_not_run`.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import starlark as sl

from bot.buck.evaluation import MAX_BRACKET_DEPTH, bracket_depth
from bot.cmake.model import repo_path
from bot.cmake.state import Frame
from bot.cmake.syntax import Command, ParseProblem

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation

# The keywords that end a COMMAND's argument list (CMake 3.29's execute_process signature).
_KEYWORDS = frozenset(
    {
        "COMMAND",
        "WORKING_DIRECTORY",
        "TIMEOUT",
        "RESULT_VARIABLE",
        "RESULTS_VARIABLE",
        "OUTPUT_VARIABLE",
        "ERROR_VARIABLE",
        "INPUT_FILE",
        "OUTPUT_FILE",
        "ERROR_FILE",
        "OUTPUT_QUIET",
        "ERROR_QUIET",
        "COMMAND_ECHO",
        "OUTPUT_STRIP_TRAILING_WHITESPACE",
        "ERROR_STRIP_TRAILING_WHITESPACE",
        "ENCODING",
        "ECHO_OUTPUT_VARIABLE",
        "ECHO_ERROR_VARIABLE",
        "COMMAND_ERROR_IS_FATAL",
    }
)
_FILELIST_SCRIPT = re.compile(
    r"\s*exec\(\s*open\(\s*(?P<q>['\"])(?P<path>[^'\"]+)(?P=q)\s*\)\.read\(\)\s*\)\s*;\s*"
    r"print\(\s*(?P<s>['\"])(?P<separator>[^'\"\\]*)(?P=s)\.join\(\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*\)\s*;?\s*"
)
# A list file is data; a few hundred milliseconds is plenty (ExecuTorch's takes ~2 ms).
_EVAL_SECONDS = 2.0
_MAX_CALL_DEPTH = 50


def execute_process(ev: Evaluation, command: Command, frame: Frame) -> None:
    """execute_process(): the list-printing script above is evaluated; anything else succeeds, empty."""
    words = ev.expand(command.args, frame)
    commands = _commands(words)
    output, error, result = "", "", "0"
    if len(commands) == 1 and (script := _filelist_script(commands[0])) is not None:
        output, error = _print_filelist(ev, frame, *script)
        result = "0" if error is None else "1"
        error = error or ""
    elif commands:
        shown = " ".join(commands[0])[:200]
        ev.processes_not_run.append(
            ParseProblem(command.path, command.line, f"execute_process: `{shown}` not run; its output taken as empty")
        )
    if "OUTPUT_STRIP_TRAILING_WHITESPACE" in words:
        output = output.rstrip()
    for keyword, value in (("RESULT_VARIABLE", result), ("OUTPUT_VARIABLE", output), ("ERROR_VARIABLE", error)):
        if keyword in words[:-1]:
            frame.scope.set(words[words.index(keyword) + 1], value)


def _commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    current: list[str] | None = None
    for word in words:
        if word == "COMMAND":
            current = []
            commands.append(current)
        elif word in _KEYWORDS:
            current = None
        elif current is not None:
            current.append(word)
    return commands


def _filelist_script(argv: list[str]) -> tuple[str, str, str] | None:
    """(file, separator, name) when argv is `<python> -c "<the list-printing script>"`."""
    if len(argv) != 3 or argv[1] != "-c":
        return None
    match = _FILELIST_SCRIPT.fullmatch(argv[2])
    return (match["path"], match["separator"], match["name"]) if match else None


def _print_filelist(ev: Evaluation, frame: Frame, path: str, separator: str, name: str) -> tuple[str, str | None]:
    """What the script prints, or ("", why it fails)."""
    where = repo_path(ev.resolve(path, frame))
    data = ev.tree.read(where) if where is not None else None
    if where is None or data is None:
        return "", f"No such file or directory: '{path}'"
    module = ev.evaluated_list_files.get(where)
    if module is None:
        module = ev.evaluated_list_files[where] = _evaluate_list_file(where, data)
    if isinstance(module, str):
        return "", module
    value = module[name]
    if value is None:
        return "", f"NameError: name '{name}' is not defined"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "", f"TypeError: {name} is not a list of strings"
    return separator.join(value) + "\n", None


def _evaluate_list_file(path: str, data: bytes) -> sl.Module | str:
    """The evaluated module, or the error that stopped its evaluation."""
    deadline = time.monotonic() + _EVAL_SECONDS
    options = sl.EvalOptions(check_cancelled=lambda: time.monotonic() > deadline, max_callstack_size=_MAX_CALL_DEPTH)
    module = sl.Module()
    text = data.decode("utf-8", errors="replace")
    depth, line = bracket_depth(text)
    if depth > MAX_BRACKET_DEPTH:
        # starlark-rust's parser recurses per bracket and a deep list kills the process (as for
        # a BUCK file, bot/buck/evaluation.py): refused, not parsed.
        return f"{path}:{line}: brackets nested {depth} deep (more than {MAX_BRACKET_DEPTH}); not evaluated"
    try:
        ast = sl.parse(path, text, sl.Dialect.standard())
        sl.eval_with(options, module, ast, sl.Globals.standard())
    except sl.StarlarkError as error:
        first = str(error).strip().splitlines()
        return f"{path}: {first[0] if first else 'evaluation failed'}"
    return module
