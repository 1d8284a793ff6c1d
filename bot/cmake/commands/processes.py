"""execute_process(): nothing runs, except the two command shapes whose effect the model can compute.

ExecuTorch's CMake takes its source lists (`_executorch_core__srcs`, `_extension_tensor__srcs`, ...) from
`shim_et/xplat/executorch/build/build_variables.bzl`, a file that is valid Starlark and Python, by running
(tools/cmake/Codegen.cmake, executorch_append_filelist)

    ${PYTHON_EXECUTABLE} -c "exec(open('<file>').read());print(';'.join(<NAME>))"

The model never runs a process. For exactly this shape it evaluates `<file>` from the tree with a
Starlark interpreter (starlark-pyo3: no I/O, no imports, bounded in time and call depth) and prints the
list `<NAME>` joined as the script would.

Before 2a692c2da9 (2025-08-15) the lists came instead from a file generated at configure time,

    ${PYTHON_EXECUTABLE} <root>/build/extract_sources.py --config=<root>/build/cmake_deps.toml --out=<file>

(later tools/cmake/), which the CMake files then include(). That script asks buck2 for source files; the
model cannot, so the lists it would write are computed from the Buck model before the evaluation starts
(bot/facts/extracted_sources.py) and handed in by config path. For that shape, with the script in the tree
and its config among those computed, the run "writes" `<file>`: include() of it sets the `_<name>__srcs`
variables (commands/directories.py). Any other command succeeds with empty output, as before, so a
script takes its usual path; the commands not run are listed in `CMakeModel.processes_not_run`.
"""

from __future__ import annotations

import posixpath
import re
import time
from typing import TYPE_CHECKING

import starlark as sl

from bot.buck.syntax import MAX_BRACKET_DEPTH, bracket_depth
from bot.cmake.model import BINARY_ROOT, ExtractedSources, repo_path
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
    elif len(commands) == 1 and (extraction := _extraction(ev, commands[0], words)) is not None:
        written, lists = extraction
        if lists.failure is None:
            ev.generated[written] = lists
        else:
            result, error = "1", lists.failure
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


def _extraction(ev: Evaluation, argv: list[str], words: list[str]) -> tuple[str, ExtractedSources] | None:
    """(the model path written, the lists) when argv runs the tree's extract_sources.py with a config
    whose lists were computed; None otherwise (the command is then not run, as any other)."""
    # An empty ${PYTHON_EXECUTABLE} drops out of the list: the script may come first.
    scripts = [i for i, word in enumerate(argv[:2]) if posixpath.basename(word) == "extract_sources.py"]
    if not scripts:
        return None
    options = _long_options(argv[scripts[0] + 1 :])
    config, out = options.get("--config"), options.get("--out")
    if config is None or out is None:
        return None
    # Relative paths are taken from the process's working directory (the build directory unless given).
    directory = words[words.index("WORKING_DIRECTORY") + 1] if "WORKING_DIRECTORY" in words[:-1] else BINARY_ROOT
    directory = posixpath.join(BINARY_ROOT, directory)  # a relative one is taken from the build directory
    script = repo_path(posixpath.normpath(posixpath.join(directory, argv[scripts[0]])))
    config_path = repo_path(posixpath.normpath(posixpath.join(directory, config)))
    if script is None or config_path is None or not ev.tree.exists(script):
        return None
    lists = ev.extracted.get(config_path)
    if lists is None:
        return None
    return posixpath.normpath(posixpath.join(directory, out)), lists


def _long_options(arguments: list[str]) -> dict[str, str]:
    """`--name=value` and `--name value` options of an argparse command line."""
    options: dict[str, str] = {}
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument.startswith("--") and "=" in argument:
            name, value = argument.split("=", 1)
            options[name] = value
        elif argument.startswith("--") and index + 1 < len(arguments):
            options[argument] = arguments[index + 1]
            index += 1
        index += 1
    return options


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
