"""CMake under a profile: the targets a configuration would create, without running CMake.

ExecuTorch's CMake cannot be configured here (it needs torch, the CUDA toolkit, submodules), so
the model evaluates the repository's CMake files in order under a `CMakeProfile` (platform,
compiler, whether a CUDA compiler was found, option values) and keeps, per target, what a
review needs: sources with the `if` conditions they were added under, usage requirements with
their PUBLIC/PRIVATE/INTERFACE scope, whole-archive link pairs, and where each came from.

What it does not model is ignored rather than guessed: unknown commands do nothing,
`find_package` finds nothing, `execute_process` succeeds with empty output, unknown generator
expressions stay verbatim. Syntax errors, runaway loops and `message(FATAL_ERROR)` become
`ParseProblem` values in the model; evaluation never raises.

Paths inside the model are what CMake would see, under the virtual roots `SOURCE_ROOT` and
`BINARY_ROOT`; `repo_path` turns one back into a repository path.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import operator
import posixpath
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Callable, Iterable, Mapping, Sequence

from bot.cmake.syntax import Arg, CMakeFile, Command, ParseProblem, clear_parse_cache, parse_cmake_cached
from bot.tree import FileTree

# ExecuTorch requires its checkout to be a directory named `executorch` (its root
# CMakeLists.txt checks) and puts the parent on the include path for <executorch/...>.
SOURCE_ROOT = "/src/executorch"
BINARY_ROOT = "/build"

# Generous for ~200 files, small enough that a runaway script ends in well under a second.
_MAX_STEPS = 400_000
_MAX_LOOP_ITERATIONS = 10_000
_MAX_DEPTH = 64

_DEFAULT_PRELUDE = (
    "tools/cmake/common/preset.cmake",
    "tools/cmake/Utils.cmake",
    "tools/cmake/preset/default.cmake",
)

# ---------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CMakeProfile:
    """One configuration to evaluate under.

    `variables` act like `-D` on the cmake command line: they are cache entries before any
    file runs, so `option()` and `set(... CACHE ...)` defaults do not override them.
    `prelude` names the files `evaluate_cmake_dirs` runs first (missing ones are skipped).
    """

    name: str
    compiler_id: str
    platform: str
    cuda: bool
    variables: Mapping[str, str] = field(default_factory=dict)
    prelude: tuple[str, ...] = _DEFAULT_PRELUDE

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", MappingProxyType(dict(self.variables)))

    def with_variables(self, name: str | None = None, **overrides: str) -> "CMakeProfile":
        """This profile with some variables overridden (e.g. EXECUTORCH_BUILD_EXTENSION_LLM="ON")."""
        merged = {**self.variables, **overrides}
        suffix = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        return dataclasses.replace(self, name=name or f"{self.name}+{suffix}", variables=merged)


_NVCC_LINUX = "/usr/local/cuda/bin/nvcc"
# ExecuTorch's default.cmake rejects EXECUTORCH_BUILD_CUDA without the tensor extension
# (check_required_options_on), so a CUDA profile that configures at all turns both on.
_CUDA_OPTIONS = {"EXECUTORCH_BUILD_CUDA": "ON", "EXECUTORCH_BUILD_EXTENSION_TENSOR": "ON"}
_NVCC_WINDOWS = "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.8/bin/nvcc.exe"

PROFILES: Mapping[str, CMakeProfile] = MappingProxyType(
    {
        "linux-gcc-cuda": CMakeProfile(
            "linux-gcc-cuda",
            "GNU",
            "Linux",
            True,
            {**_CUDA_OPTIONS, "CMAKE_CUDA_COMPILER": _NVCC_LINUX},
        ),
        "msvc": CMakeProfile(
            "msvc",
            "MSVC",
            "Windows",
            True,
            {**_CUDA_OPTIONS, "CMAKE_CUDA_COMPILER": _NVCC_WINDOWS},
        ),
        "cpu-only": CMakeProfile("cpu-only", "GNU", "Linux", False, {"EXECUTORCH_BUILD_CUDA": "OFF"}),
    }
)
DEFAULT_PROFILE = PROFILES["linux-gcc-cuda"]


def _platform_variables(profile: CMakeProfile) -> dict[str, str]:
    """The normal variables `project()` would leave behind for this profile."""
    processor = {"Windows": "AMD64", "Darwin": "arm64"}.get(profile.platform, "x86_64")
    values = {
        "CMAKE_SYSTEM_NAME": profile.platform,
        "CMAKE_HOST_SYSTEM_NAME": profile.platform,
        "CMAKE_SYSTEM_PROCESSOR": processor,
        "CMAKE_HOST_SYSTEM_PROCESSOR": processor,
        "CMAKE_CXX_COMPILER_ID": profile.compiler_id,
        "CMAKE_C_COMPILER_ID": profile.compiler_id,
        "CMAKE_SOURCE_DIR": SOURCE_ROOT,
        "CMAKE_BINARY_DIR": BINARY_ROOT,
        "PROJECT_SOURCE_DIR": SOURCE_ROOT,
        "PROJECT_BINARY_DIR": BINARY_ROOT,
        "CMAKE_INSTALL_LIBDIR": "lib",
        "CMAKE_INSTALL_BINDIR": "bin",
        "CMAKE_INSTALL_INCLUDEDIR": "include",
        "CMAKE_INSTALL_DATADIR": "share",
        "CMAKE_SIZEOF_VOID_P": "8",
        "CMAKE_VERSION": "3.31.6",
        "CMAKE_MAJOR_VERSION": "3",
        "CMAKE_MINOR_VERSION": "31",
        "CMAKE_COMMAND": "cmake",
        "CMAKE_DL_LIBS": "dl" if profile.platform == "Linux" else "",
    }
    if profile.platform == "Windows":
        values.update(WIN32="1", CMAKE_HOST_WIN32="1")
    else:
        values.update(UNIX="1", CMAKE_HOST_UNIX="1")
    if profile.platform == "Linux":
        values.update(LINUX="1", CMAKE_HOST_LINUX="1")
    if profile.platform == "Darwin":
        values.update(APPLE="1", CMAKE_HOST_APPLE="1")
    if profile.compiler_id == "MSVC":
        values.update(MSVC="1", MSVC_VERSION="1940")
    if profile.compiler_id == "GNU":
        values.update(CMAKE_COMPILER_IS_GNUCXX="1", CMAKE_COMPILER_IS_GNUCC="1")
    if profile.cuda:
        values["CMAKE_CUDA_COMPILER_ID"] = "NVIDIA"
    return values


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------

Location = tuple[str, int]  # (repository path, 1-based line)


@dataclass(frozen=True, slots=True)
class CMakeSource:
    """A source of a target: `path_repo_relative` (or the expanded text when it is not in the
    tree), the `if` conditions it was added under, and where it was added."""

    path_repo_relative: str
    condition_text: str
    path: str
    line: int
    via: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class Scoped:
    """One usage requirement (a link option, definition, library, ...) with its scope.

    `language` is set when a `$<COMPILE_LANGUAGE:...>` restricts the item ("CXX", "C,CXX");
    None means every language. `via` lists the commands inside helper functions that
    produced it when `path:line` is the call site of such a helper.
    """

    value: str
    scope: str
    path: str
    line: int
    condition_text: str
    language: str | None = None
    via: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class WholeArchive:
    """A library linked whole (`--whole-archive`, `-force_load`, `/WHOLEARCHIVE:`, LINK_LIBRARY)."""

    library: str
    scope: str
    path: str
    line: int
    condition_text: str = ""
    via: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class InstalledFile:
    """A file `install(FILES|DIRECTORY ...)` would install."""

    repo_path: str
    path: str
    line: int
    destination: str
    condition_text: str = ""


@dataclass(frozen=True, slots=True)
class CMakeTarget:
    """A target as the profile's configuration would create it.

    `kind` is CMake's TYPE property (STATIC_LIBRARY, SHARED_LIBRARY, OBJECT_LIBRARY,
    INTERFACE_LIBRARY, MODULE_LIBRARY, EXECUTABLE, UTILITY, ALIAS, UNKNOWN_LIBRARY).
    """

    name: str
    kind: str
    path: str
    line: int
    condition_text: str = ""
    sources: tuple[CMakeSource, ...] = ()
    link_options: tuple[Scoped, ...] = ()
    compile_definitions: tuple[Scoped, ...] = ()
    compile_options: tuple[Scoped, ...] = ()
    link_libraries: tuple[Scoped, ...] = ()
    include_directories: tuple[Scoped, ...] = ()
    whole_archive: tuple[WholeArchive, ...] = ()
    installed: bool = False
    imported: bool = False
    alias_of: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    via: tuple[Location, ...] = ()

    def property(self, name: str) -> str | None:
        """A property set by set_target_properties/set_property (OUTPUT_NAME, ...)."""
        return dict(self.properties).get(name)


@dataclass(frozen=True, slots=True)
class CMakeModel:
    """Targets, option values and installs of one profile's evaluation.

    `problems` are errors in the evaluated files (syntax, runaway loops, FATAL_ERROR reached,
    commands on undefined targets); `skipped` are things the model could not follow
    (a missing subdirectory or included file: submodules are not in the tree).
    """

    profile: CMakeProfile
    targets: Mapping[str, CMakeTarget]
    options: Mapping[str, str]
    installed_files: tuple[InstalledFile, ...]
    problems: tuple[ParseProblem, ...]
    files_read: tuple[str, ...]
    skipped: tuple[ParseProblem, ...] = ()


def repo_path(path: str) -> str | None:
    """The repository path of a model path under SOURCE_ROOT, or None when outside it."""
    normalized = posixpath.normpath(path)
    if normalized == SOURCE_ROOT:
        return ""
    if normalized.startswith(SOURCE_ROOT + "/"):
        return normalized[len(SOURCE_ROOT) + 1 :]
    return None


def evaluate_cmake(
    tree: FileTree, profile: CMakeProfile = DEFAULT_PROFILE, root_dirs: tuple[str, ...] = ("",)
) -> CMakeModel:
    """Evaluate `<dir>/CMakeLists.txt` of each root dir (the repository root by default),
    following add_subdirectory and include."""
    evaluation = _Evaluation(tree, profile)
    top = evaluation.top_frame()
    for directory in root_dirs:
        if directory.strip("/") == "":
            evaluation.run_directory_file("", top, None)
        else:
            evaluation.add_subdirectory(directory.strip("/"), top, None)
    return evaluation.model()


def evaluate_cmake_dirs(
    tree: FileTree, profile: CMakeProfile = DEFAULT_PROFILE, dirs: Iterable[str] = ()
) -> CMakeModel:
    """Evaluate subdirectories standalone, after the profile's prelude (option presets and
    helper modules) and the root CMakeLists.txt's literal `option()` defaults."""
    evaluation = _Evaluation(tree, profile)
    top = evaluation.top_frame()
    evaluation.run_prelude(top)
    for directory in dirs:
        evaluation.add_subdirectory(directory.strip("/"), top, None)
    return evaluation.model()


# ---------------------------------------------------------------------------------------
# Values: references, escapes and lists
# ---------------------------------------------------------------------------------------

_REFERENCE_OPEN = re.compile(r"\$(ENV|CACHE)?\{")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", ";": "\\;", "\n": "", "0": "\0"}


def expand_references(text: str, lookup: Callable[[str, str], str]) -> str:
    """Expand `${X}`, `$ENV{X}`, `$CACHE{X}` (nested) and escapes in raw argument text.

    `lookup(kind, name)` gets kind "" (normal), "ENV" or "CACHE". `\\;` stays `\\;` because
    CMake keeps it so that list splitting can skip it.
    """
    expanded, _ = _expand_from(text, 0, lookup, inside_reference=False)
    return expanded


def _expand_from(
    text: str, index: int, lookup: Callable[[str, str], str], inside_reference: bool
) -> tuple[str, int]:
    parts: list[str] = []
    length = len(text)
    while index < length:
        char = text[index]
        if inside_reference and char == "}":
            return "".join(parts), index + 1
        if char == "\\" and index + 1 < length:
            following = text[index + 1]
            parts.append(_ESCAPES.get(following, following if not following.isalnum() else "\\" + following))
            index += 2
            continue
        if char == "$":
            opened = _REFERENCE_OPEN.match(text, index)
            if opened:
                name, after = _expand_from(text, opened.end(), lookup, inside_reference=True)
                if after < 0:
                    # Unterminated: CMake rejects the file; keep the text as written.
                    parts.append(text[index:])
                    return "".join(parts), (-1 if inside_reference else length)
                parts.append(lookup(opened.group(1) or "", name))
                index = after
                continue
        parts.append(char)
        index += 1
    return "".join(parts), (-1 if inside_reference else length)


def split_list(value: str) -> list[str]:
    """A CMake list's elements: split on `;` except `\\;` and inside `[...]`; empties dropped."""
    if ";" not in value:
        return [value] if value else []
    if "[" not in value and "\\" not in value:
        return [item for item in value.split(";") if item]
    items: list[str] = []
    current: list[str] = []
    depth = 0
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] == ";":
            current.append("\\;")
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        elif char == ";" and depth == 0:
            if current:
                items.append("".join(current))
            current = []
            index += 1
            continue
        current.append(char)
        index += 1
    if current:
        items.append("".join(current))
    return items


_FALSE_CONSTANTS = frozenset({"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"})
_TRUE_CONSTANTS = frozenset({"1", "ON", "YES", "TRUE", "Y"})
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def is_false_value(value: str) -> bool:
    """CMake's cmIsOff: "", 0, OFF, NO, FALSE, N, IGNORE, NOTFOUND, *-NOTFOUND."""
    upper = value.upper()
    return upper in _FALSE_CONSTANTS or upper.endswith("-NOTFOUND") or (
        bool(_NUMBER.match(value)) and float(value) == 0
    )


def _constant_truth(value: str) -> bool | None:
    """True/False when `value` is one of if()'s named constants or a number, else None."""
    upper = value.upper()
    if upper in _TRUE_CONSTANTS:
        return True
    if upper in _FALSE_CONSTANTS or upper.endswith("-NOTFOUND"):
        return False
    if _NUMBER.match(value):
        return float(value) != 0
    return None


# ---------------------------------------------------------------------------------------
# Generator expressions
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GenexContext:
    """What generator expressions may ask about: compiler, platform, and (for per-language
    usage requirements) the language being compiled; None where no language applies."""

    compiler_id: str
    platform: str
    cuda: bool
    language: str | None = None

    def compiler_for(self, language: str) -> str:
        """The compiler id for `language` (CUDA's is NVIDIA when a CUDA compiler was found)."""
        if language == "CUDA":
            return "NVIDIA" if self.cuda else ""
        return self.compiler_id


_LANGUAGES = ("C", "CXX", "CUDA")


def evaluate_generator_expressions(text: str, context: GenexContext) -> str:
    """Evaluate the generator expressions in `text`; ones the model cannot decide stay as written."""
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


def _split_top_level(text: str, separator: str, limit: int = -1) -> list[str]:
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
    head, *rest = _split_top_level(content, ":", limit=1)
    name = evaluate_generator_expressions(head, context)
    argument = rest[0] if rest else None

    def verbatim() -> str:
        if argument is None:
            return f"$<{name}>"
        return f"$<{name}:{evaluate_generator_expressions(argument, context)}>"

    def arguments() -> list[str]:
        if argument is None:
            return []
        return [evaluate_generator_expressions(part, context) for part in _split_top_level(argument, ",")]

    if name in ("0", "1") and argument is not None:
        return evaluate_generator_expressions(argument, context) if name == "1" else ""
    constants = {"ANGLE-R": ">", "COMMA": ",", "SEMICOLON": ";", "QUOTE": '"'}
    if name in constants and argument is None:
        return constants[name]
    if name in ("BUILD_INTERFACE", "BUILD_LOCAL_INTERFACE", "LINK_ONLY", "TARGET_NAME"):
        return evaluate_generator_expressions(argument or "", context)
    if name == "INSTALL_INTERFACE":
        return ""
    if name == "BOOL":
        value = evaluate_generator_expressions(argument or "", context)
        return verbatim() if "$<" in value else ("0" if is_false_value(value) else "1")
    if name == "NOT":
        value = evaluate_generator_expressions(argument or "", context)
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
        value = evaluate_generator_expressions(argument or "", context)
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


def _is_language_dependent(text: str) -> bool:
    return "COMPILE_LANG" in text


# ---------------------------------------------------------------------------------------
# if() conditions
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    """A condition argument after expansion; `value` is set once a sub-expression is decided."""

    text: str
    quoted: bool
    value: bool | None = None
    paren: bool = False

    def is_keyword(self, *keywords: str) -> bool:
        return not self.quoted and self.value is None and not self.paren and self.text in keywords


_UNARY = ("EXISTS", "COMMAND", "DEFINED", "TARGET", "POLICY", "TEST", "IS_DIRECTORY", "IS_SYMLINK",
          "IS_ABSOLUTE", "IS_READABLE", "IS_WRITABLE", "IS_EXECUTABLE")
_BINARY = ("MATCHES", "LESS", "GREATER", "EQUAL", "LESS_EQUAL", "GREATER_EQUAL", "STRLESS",
           "STRGREATER", "STREQUAL", "STRLESS_EQUAL", "STRGREATER_EQUAL", "VERSION_LESS",
           "VERSION_GREATER", "VERSION_EQUAL", "VERSION_LESS_EQUAL", "VERSION_GREATER_EQUAL",
           "IN_LIST", "IS_NEWER_THAN", "PATH_EQUAL")
_COMPARISONS: Mapping[str, Callable[[object, object], bool]] = {
    "LESS": operator.lt, "GREATER": operator.gt, "EQUAL": operator.eq,
    "LESS_EQUAL": operator.le, "GREATER_EQUAL": operator.ge,
}


class _ConditionError(Exception):
    """An if() argument list CMake itself would reject; reported as a problem."""


def _version_key(text: str) -> tuple[int, ...]:
    numbers = []
    for part in text.split("."):
        digits = re.match(r"\d*", part).group(0)
        numbers.append(int(digits) if digits else 0)
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


# ---------------------------------------------------------------------------------------
# Evaluation state
# ---------------------------------------------------------------------------------------

_UNSET = object()
# Per list element: the `if` conditions it was added under (used to give each source the
# condition of the `list(APPEND ...)` that added it, not only of the add_library).
Origins = tuple[tuple[str, ...], ...]


class _Scope:
    """A variable scope (directory, function or block), reading through to its parent."""

    __slots__ = ("own", "parent")

    def __init__(self, parent: "_Scope | None") -> None:
        self.own: dict[str, object] = {}
        self.parent = parent

    def get(self, name: str) -> tuple[str, Origins | None] | None:
        scope: _Scope | None = self
        while scope is not None:
            entry = scope.own.get(name)
            if entry is not None:
                return None if entry is _UNSET else entry  # type: ignore[return-value]
            scope = scope.parent
        return None

    def set(self, name: str, value: str, origins: Origins | None = None) -> None:
        self.own[name] = (value, origins)

    def unset(self, name: str) -> None:
        self.own[name] = _UNSET

    def pin(self, name: str) -> None:
        """Keep this scope's current view of `name` before the parent's value changes."""
        if name not in self.own:
            entry = self.get(name)
            self.own[name] = _UNSET if entry is None else entry


@dataclass(slots=True)
class _Directory:
    """Directory-level state: paths and the usage requirements add_definitions & co. add."""

    source_dir: str
    binary_dir: str
    compile_definitions: list[Scoped] = field(default_factory=list)
    compile_options: list[Scoped] = field(default_factory=list)
    include_directories: list[Scoped] = field(default_factory=list)
    link_libraries: list[Scoped] = field(default_factory=list)

    def child(self, source_dir: str, binary_dir: str) -> "_Directory":
        return _Directory(
            source_dir,
            binary_dir,
            list(self.compile_definitions),
            list(self.compile_options),
            list(self.include_directories),
            list(self.link_libraries),
        )


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where a command runs: scope, directory, enclosing conditions, helper call sites."""

    scope: _Scope
    directory: _Directory
    conditions: tuple[str, ...] = ()
    call_sites: tuple[Location, ...] = ()
    macro_arguments: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class _Callable:
    """A function() or macro() definition: its body is a slice of its file's commands."""

    name: str
    parameters: tuple[str, ...]
    is_macro: bool
    program: "_Program"
    body_start: int
    body_end: int
    path: str


class _Flow(Enum):
    NEXT = 0
    BREAK = 1
    CONTINUE = 2
    RETURN = 3


@dataclass(frozen=True, slots=True)
class _Program:
    """A file's commands with block structure: opener index -> end index, if -> branches."""

    file: CMakeFile
    ends: Mapping[int, int]
    branches: Mapping[int, tuple[int, ...]]
    problems: tuple[ParseProblem, ...]


_OPENERS = {"if": "endif", "foreach": "endforeach", "while": "endwhile", "function": "endfunction",
            "macro": "endmacro", "block": "endblock"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


def _structure(file: CMakeFile) -> _Program:
    """Match block openers with their ends (CMake does this while reading, so do we)."""
    ends: dict[int, int] = {}
    branches: dict[int, list[int]] = {}
    problems: list[ParseProblem] = []
    stack: list[int] = []
    commands = file.commands
    for index, command in enumerate(commands):
        name = command.name
        if name in _OPENERS:
            stack.append(index)
            if name == "if":
                branches[index] = [index]
        elif name in ("elseif", "else"):
            if stack and commands[stack[-1]].name == "if":
                branches[stack[-1]].append(index)
            else:
                problems.append(ParseProblem(file.path, command.line, f"{name}() without if()"))
        elif name in _CLOSERS:
            if stack and commands[stack[-1]].name == _CLOSERS[name]:
                ends[stack.pop()] = index
            else:
                problems.append(ParseProblem(file.path, command.line, f"{name}() without {_CLOSERS[name]}()"))
    for index in stack:
        opener = commands[index]
        problems.append(ParseProblem(file.path, opener.line, f"{opener.name}() without {_OPENERS[opener.name]}()"))
        ends[index] = len(commands)
    return _Program(file, ends, {k: tuple(v) for k, v in branches.items()}, tuple(problems))


_programs: OrderedDict[tuple[str, str], _Program] = OrderedDict()


def _program_for(blob_id: str | None, data: bytes, path: str) -> _Program:
    key = (blob_id or "", path)
    if blob_id is not None and key in _programs:
        _programs.move_to_end(key)
        return _programs[key]
    program = _structure(parse_cmake_cached(blob_id, data, path))
    if blob_id is not None:
        _programs[key] = program
        if len(_programs) > 4096:
            _programs.popitem(last=False)
    return program


def clear_caches() -> None:
    """Forget remembered parses and block structures (benchmarks measure cold runs with it)."""
    _programs.clear()
    clear_parse_cache()


class _Runaway(Exception):
    """The step budget ran out: the evaluation stops and reports where."""


@dataclass(slots=True)
class _TargetBuilder:
    """A target while commands still add to it; frozen into CMakeTarget at the end."""

    name: str
    kind: str
    path: str
    line: int
    condition_text: str
    via: tuple[Location, ...]
    imported: bool = False
    alias_of: str | None = None
    sources: list[CMakeSource] = field(default_factory=list)
    link_options: list[Scoped] = field(default_factory=list)
    compile_definitions: list[Scoped] = field(default_factory=list)
    compile_options: list[Scoped] = field(default_factory=list)
    link_libraries: list[Scoped] = field(default_factory=list)
    include_directories: list[Scoped] = field(default_factory=list)
    installed: bool = False
    properties: dict[str, str] = field(default_factory=dict)

    def freeze(self) -> CMakeTarget:
        return CMakeTarget(
            name=self.name,
            kind=self.kind,
            path=self.path,
            line=self.line,
            condition_text=self.condition_text,
            sources=tuple(self.sources),
            link_options=tuple(self.link_options),
            compile_definitions=tuple(self.compile_definitions),
            compile_options=tuple(self.compile_options),
            link_libraries=tuple(self.link_libraries),
            include_directories=tuple(self.include_directories),
            whole_archive=tuple(whole_archives(self.link_libraries) + whole_archives(self.link_options)),
            installed=self.installed,
            imported=self.imported,
            alias_of=self.alias_of,
            properties=tuple(sorted(self.properties.items())),
            via=self.via,
        )


# Usage-requirement properties and the builder list + scope they stand for.
_USAGE_PROPERTIES = {
    "LINK_OPTIONS": ("link_options", "PRIVATE"),
    "INTERFACE_LINK_OPTIONS": ("link_options", "INTERFACE"),
    "COMPILE_DEFINITIONS": ("compile_definitions", "PRIVATE"),
    "INTERFACE_COMPILE_DEFINITIONS": ("compile_definitions", "INTERFACE"),
    "COMPILE_OPTIONS": ("compile_options", "PRIVATE"),
    "INTERFACE_COMPILE_OPTIONS": ("compile_options", "INTERFACE"),
    "LINK_LIBRARIES": ("link_libraries", "PRIVATE"),
    "INTERFACE_LINK_LIBRARIES": ("link_libraries", "INTERFACE"),
    "INCLUDE_DIRECTORIES": ("include_directories", "PRIVATE"),
    "INTERFACE_INCLUDE_DIRECTORIES": ("include_directories", "INTERFACE"),
}


# ---------------------------------------------------------------------------------------
# Whole-archive detection
# ---------------------------------------------------------------------------------------

_TARGET_FILE = re.compile(r"^\$<TARGET(?:_LINKER)?_FILE:([^>]+)>$")
_LINK_LIBRARY_WHOLE = re.compile(r"^\$<LINK_LIBRARY:WHOLE_ARCHIVE,(.+)>$")
_WHOLEARCHIVE_FLAG = re.compile(r"^[/-]WHOLEARCHIVE:(.+)$", re.IGNORECASE)
_MSVC_FLAG = re.compile(r"^/[A-Za-z]+(:|$)")


def _linker_words(item: str) -> list[str]:
    """What one link item passes to the linker: flags and file names, wrappers removed."""
    if item.startswith("SHELL:"):
        return [word for part in item[len("SHELL:"):].split() for word in _linker_words(part)]
    for prefix in ("LINKER:", "-Wl,", "-Xlinker,"):
        if item.startswith(prefix):
            return [word for word in _split_top_level(item[len(prefix):], ",") if word]
    return [item]


def _library_name(word: str) -> str:
    match = _TARGET_FILE.match(word)
    return match.group(1) if match else word


def whole_archives(items: Sequence[Scoped]) -> list[WholeArchive]:
    """Libraries linked whole by a sequence of link items (libraries or link options), in order.

    Tracks `--whole-archive`/`--no-whole-archive` and `--push-state`/`--pop-state` across
    items, `-force_load <lib>`, `/WHOLEARCHIVE:<lib>` and `$<LINK_LIBRARY:WHOLE_ARCHIVE,...>`.
    """
    found: list[WholeArchive] = []
    states = [False]
    force_load_next = False
    for item in items:
        for word in _linker_words(item.value):
            def record(library: str) -> None:
                found.append(WholeArchive(_library_name(library), item.scope, item.path, item.line,
                                          item.condition_text, item.via))

            link_library = _LINK_LIBRARY_WHOLE.match(word)
            flag = _WHOLEARCHIVE_FLAG.match(word)
            if word in ("--whole-archive", "-whole-archive"):
                states[-1] = True
            elif word in ("--no-whole-archive", "-no-whole-archive"):
                states[-1] = False
            elif word == "--push-state":
                states.append(states[-1])
            elif word == "--pop-state":
                if len(states) > 1:
                    states.pop()
                else:
                    states[-1] = False
            elif word == "-force_load":
                force_load_next = True
            elif word.startswith("-force_load,"):
                record(word[len("-force_load,"):])
            elif flag:
                record(flag.group(1))
            elif link_library:
                for library in _split_top_level(link_library.group(1), ","):
                    record(library)
            elif word.startswith("-") or _MSVC_FLAG.match(word):
                force_load_next = False
            elif force_load_next or states[-1]:
                record(word)
                force_load_next = False
    return found


# ---------------------------------------------------------------------------------------
# The evaluator
# ---------------------------------------------------------------------------------------

_SCOPE_KEYWORDS = {
    "PUBLIC": "PUBLIC", "PRIVATE": "PRIVATE", "INTERFACE": "INTERFACE",
    "LINK_PUBLIC": "PUBLIC", "LINK_PRIVATE": "PRIVATE", "LINK_INTERFACE_LIBRARIES": "INTERFACE",
}
_LIBRARY_KINDS = {"STATIC": "STATIC_LIBRARY", "SHARED": "SHARED_LIBRARY", "MODULE": "MODULE_LIBRARY",
                  "OBJECT": "OBJECT_LIBRARY", "INTERFACE": "INTERFACE_LIBRARY", "UNKNOWN": "UNKNOWN_LIBRARY"}
_INSTALL_KEYWORDS = frozenset({
    "EXPORT", "RUNTIME_DEPENDENCIES", "RUNTIME_DEPENDENCY_SET", "ARCHIVE", "LIBRARY", "RUNTIME",
    "OBJECTS", "FRAMEWORK", "BUNDLE", "PRIVATE_HEADER", "PUBLIC_HEADER", "RESOURCE", "FILE_SET",
    "CXX_MODULES_BMI", "DESTINATION", "PERMISSIONS", "CONFIGURATIONS", "COMPONENT",
    "NAMELINK_COMPONENT", "OPTIONAL", "EXCLUDE_FROM_ALL", "NAMELINK_ONLY", "NAMELINK_SKIP",
    "INCLUDES", "TYPE", "RENAME", "FILES_MATCHING", "PATTERN", "REGEX", "USE_SOURCE_PERMISSIONS",
    "FILE_PERMISSIONS", "DIRECTORY_PERMISSIONS", "MESSAGE_NEVER",
})


@dataclass(frozen=True, slots=True)
class _Item:
    """An expanded argument: its value, the line it was written on, its element origins."""

    value: str
    line: int
    origins: tuple[str, ...] = ()


def _join_conditions(parts: Sequence[str]) -> str:
    unique = list(dict.fromkeys(p for p in parts if p))
    if len(unique) == 1:
        return unique[0]
    return " AND ".join(f"({p})" if (" OR " in p or " AND " in p) else p for p in unique)


def _negate(condition: str) -> str:
    return f"NOT ({condition})" if " " in condition else f"NOT {condition}"


def _condition_text(args: Sequence[Arg]) -> str:
    words = []
    for arg in args:
        if arg.bracket:
            words.append(f"[[{arg.text}]]")
        elif arg.quoted:
            words.append(f'"{arg.text}"')
        else:
            words.append(arg.text)
    text = " ".join(words)
    return text.replace("( ", "(").replace(" )", ")")


_MACRO_REFERENCE = re.compile(r"\$\{([^${}]*)\}")


class _Evaluation:
    """One run over a tree under a profile. Mutable while running; `model()` freezes it."""

    def __init__(self, tree: FileTree, profile: CMakeProfile) -> None:
        self.tree = tree
        self.profile = profile
        self.cache: dict[str, str] = {}
        self.environment: dict[str, str] = {}
        for name, value in profile.variables.items():
            if name.startswith("ENV{") and name.endswith("}"):
                self.environment[name[4:-1]] = value
            else:
                self.cache[name] = value
        # A profile's variables are what a user passes with -D: report them with the options.
        self.option_names: dict[str, None] = {n: None for n in profile.variables if not n.startswith("ENV{")}
        self.callables: dict[str, _Callable] = {}
        self.targets: dict[str, _TargetBuilder] = {}
        self.global_properties: dict[str, str] = {}
        self.installed_files: list[InstalledFile] = []
        self.problems: list[ParseProblem] = []
        self.skipped: list[ParseProblem] = []
        self.files_read: dict[str, None] = {}
        self.include_guarded: set[str] = set()
        self.steps = 0
        self.exhausted = False
        self.depth = 0
        self.top_scope = _Scope(None)
        self._all_paths: tuple[str, ...] | None = None
        self._handlers = self._command_handlers()

    # -- entry points ----------------------------------------------------------------
    def top_frame(self) -> _Frame:
        for name, value in _platform_variables(self.profile).items():
            self.top_scope.set(name, value)
        self.top_scope.set("CMAKE_CURRENT_SOURCE_DIR", SOURCE_ROOT)
        self.top_scope.set("CMAKE_CURRENT_BINARY_DIR", BINARY_ROOT)
        return _Frame(self.top_scope, _Directory(SOURCE_ROOT, BINARY_ROOT))

    def run_prelude(self, frame: _Frame) -> None:
        for path in self.profile.prelude:
            if self.tree.exists(path):
                self._guarded(lambda p=path: self.run_file(p, frame))
        self._apply_root_options(frame)

    def _apply_root_options(self, frame: _Frame) -> None:
        """The root CMakeLists.txt's `option(NAME "doc" LITERAL)` calls, without running it."""
        data = self.tree.read("CMakeLists.txt")
        if data is None:
            return
        program = _program_for(self.tree.blob_id("CMakeLists.txt"), data, "CMakeLists.txt")
        for command in program.file.commands:
            literal = all("$" not in arg.text for arg in command.args)
            if command.name == "option" and literal and command.args:
                self._guarded(lambda c=command: self._option(c, frame))

    def model(self) -> CMakeModel:
        options = {}
        for name in self.option_names:
            entry = self.top_scope.get(name)
            options[name] = entry[0] if entry is not None else self.cache.get(name, "")
        return CMakeModel(
            profile=self.profile,
            targets=MappingProxyType({name: b.freeze() for name, b in self.targets.items()}),
            options=MappingProxyType(options),
            installed_files=tuple(self.installed_files),
            problems=tuple(dict.fromkeys(self.problems)),
            files_read=tuple(self.files_read),
            skipped=tuple(dict.fromkeys(self.skipped)),
        )

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except _Runaway as runaway:
            # Once the budget is spent every later file stops at once; report it one time.
            if not self.exhausted:
                self.problems.append(ParseProblem(*runaway.args))
            self.exhausted = True

    # -- files and directories ---------------------------------------------------------
    def run_directory_file(self, directory: str, frame: _Frame, at: Command | None) -> None:
        path = posixpath.join(directory, "CMakeLists.txt") if directory else "CMakeLists.txt"
        self._guarded(lambda: self.run_file(path, frame, at))

    def add_subdirectory(self, directory: str, frame: _Frame, at: Command | None) -> None:
        path = posixpath.join(directory, "CMakeLists.txt") if directory else "CMakeLists.txt"
        if not self.tree.exists(path):
            where = (at.path, at.line) if at else (path, 0)
            self.skipped.append(ParseProblem(where[0], where[1], f"add_subdirectory: no {path} in the tree"))
            return
        scope = _Scope(frame.scope)
        source_dir = posixpath.join(SOURCE_ROOT, directory) if directory else SOURCE_ROOT
        binary_dir = posixpath.join(BINARY_ROOT, directory) if directory else BINARY_ROOT
        scope.set("CMAKE_CURRENT_SOURCE_DIR", source_dir)
        scope.set("CMAKE_CURRENT_BINARY_DIR", binary_dir)
        child = _Frame(scope, frame.directory.child(source_dir, binary_dir), frame.conditions)
        self.run_directory_file(directory, child, at)

    def run_file(self, path: str, frame: _Frame, at: Command | None = None) -> _Flow:
        data = self.tree.read(path)
        if data is None:
            where = (at.path, at.line) if at else (path, 0)
            self.skipped.append(ParseProblem(where[0], where[1], f"cannot read {path}"))
            return _Flow.NEXT
        if self.depth >= _MAX_DEPTH:
            where = (at.path, at.line) if at else (path, 0)
            self.problems.append(ParseProblem(where[0], where[1], f"nesting deeper than {_MAX_DEPTH} at {path}"))
            return _Flow.NEXT
        program = _program_for(self.tree.blob_id(path), data, path)
        self.files_read[path] = None
        self.problems.extend(program.file.problems)
        self.problems.extend(program.problems)
        scope = frame.scope
        saved = {name: scope.get(name) for name in ("CMAKE_CURRENT_LIST_DIR", "CMAKE_CURRENT_LIST_FILE")}
        scope.set("CMAKE_CURRENT_LIST_FILE", posixpath.join(SOURCE_ROOT, path))
        scope.set("CMAKE_CURRENT_LIST_DIR", posixpath.join(SOURCE_ROOT, posixpath.dirname(path)).rstrip("/"))
        self.depth += 1
        try:
            self._run(program, 0, len(program.file.commands), frame)
        finally:
            self.depth -= 1
            for name, entry in saved.items():
                if entry is None:
                    scope.unset(name)
                else:
                    scope.set(name, entry[0])
        return _Flow.NEXT

    # -- the interpreter loop ----------------------------------------------------------
    def _run(self, program: _Program, start: int, end: int, frame: _Frame) -> _Flow:
        commands = program.file.commands
        index = start
        while index < end:
            command = commands[index]
            self.steps += 1
            if self.steps > _MAX_STEPS:
                raise _Runaway(command.path, command.line, f"evaluation stopped after {_MAX_STEPS} commands")
            name = command.name
            if name == "if":
                flow = self._if(program, index, frame)
                index = program.ends[index] + 1
            elif name in ("foreach", "while"):
                flow = self._loop(program, index, frame)
                index = program.ends[index] + 1
            elif name in ("function", "macro"):
                self._define(program, index, frame)
                index = program.ends[index] + 1
                continue
            elif name == "block":
                flow = self._block(program, index, frame)
                index = program.ends[index] + 1
            elif name == "break":
                return _Flow.BREAK
            elif name == "continue":
                return _Flow.CONTINUE
            elif name == "return":
                self._return(command, frame)
                return _Flow.RETURN
            elif name in _CLOSERS or name in ("elseif", "else"):
                index += 1
                continue
            else:
                flow = self._command(command, frame)
                index += 1
            if flow is not _Flow.NEXT:
                return flow
        return _Flow.NEXT

    def _command(self, command: Command, frame: _Frame) -> _Flow:
        definition = self.callables.get(command.name)
        if definition is not None:
            return self._call(definition, command, frame)
        handler = self._handlers.get(command.name)
        if handler is not None:
            try:
                handler(command, frame)
            except (ValueError, IndexError, KeyError, TypeError) as error:
                # A command the model handles badly is a problem in the model, not a failed review.
                self.problems.append(
                    ParseProblem(command.path, command.line, f"could not evaluate {command.name}(): {error}")
                )
        return _Flow.NEXT

    # -- expansion -----------------------------------------------------------------------
    def lookup(self, frame: _Frame, kind: str, name: str) -> str:
        if kind == "ENV":
            return self.environment.get(name, "")
        if kind == "CACHE":
            return self.cache.get(name, "")
        entry = frame.scope.get(name)
        if entry is not None:
            return entry[0]
        return self.cache.get(name, "")

    def defined(self, frame: _Frame, name: str) -> bool:
        return frame.scope.get(name) is not None or name in self.cache

    def _raw_text(self, arg: Arg, frame: _Frame) -> str:
        if frame.macro_arguments is None or "${" not in arg.text:
            return arg.text
        substitutions = frame.macro_arguments
        return _MACRO_REFERENCE.sub(lambda m: substitutions.get(m.group(1), m.group(0)), arg.text)

    def _expand_one(self, arg: Arg, frame: _Frame) -> str:
        if arg.bracket:
            return arg.text
        text = self._raw_text(arg, frame)
        if "$" not in text and "\\" not in text:
            return text
        return expand_references(text, lambda kind, name: self.lookup(frame, kind, name))

    def expand(self, args: Sequence[Arg], frame: _Frame) -> list[str]:
        """Arguments as the command receives them: unquoted ones split into list elements."""
        values: list[str] = []
        for arg in args:
            value = self._expand_one(arg, frame)
            if arg.quoted:
                values.append(value)
            else:
                values.extend(split_list(value))
        return values

    def expand_items(self, args: Sequence[Arg], frame: _Frame) -> list[_Item]:
        """Like `expand`, keeping each element's line and the conditions it was added under."""
        items: list[_Item] = []
        for arg in args:
            value = self._expand_one(arg, frame)
            if arg.quoted:
                items.append(_Item(value, arg.line))
                continue
            elements = split_list(value)
            origins: Origins | None = None
            reference = re.fullmatch(r"\$\{([^${}]+)\}", self._raw_text(arg, frame))
            if reference:
                entry = frame.scope.get(reference.group(1))
                if entry is not None and entry[1] is not None and len(entry[1]) == len(elements):
                    origins = entry[1]
            for position, element in enumerate(elements):
                items.append(_Item(element, arg.line, origins[position] if origins else ()))
        return items

    # -- control flow --------------------------------------------------------------------
    def _if(self, program: _Program, index: int, frame: _Frame) -> _Flow:
        commands = program.file.commands
        branch_starts = program.branches[index]
        end = program.ends[index]
        for position, branch in enumerate(branch_starts):
            command = commands[branch]
            if command.name != "else" and not self.condition(command, frame):
                continue
            # Texts are only built for the branch taken: most if()s in helpers are not.
            parts = [_negate(self._condition_text(commands[b], frame)) for b in branch_starts[:position]]
            if command.name != "else":
                parts.append(self._condition_text(command, frame))
            stop = branch_starts[position + 1] if position + 1 < len(branch_starts) else end
            inner = dataclasses.replace(frame, conditions=(*frame.conditions, *parts))
            return self._run(program, branch + 1, stop, inner)
        return _Flow.NEXT

    def _condition_text(self, command: Command, frame: _Frame) -> str:
        """The condition as written, with a macro's parameters filled in."""
        if frame.macro_arguments is None:
            return _condition_text(command.args)
        return _condition_text([dataclasses.replace(a, text=self._raw_text(a, frame)) for a in command.args])

    def _loop(self, program: _Program, index: int, frame: _Frame) -> _Flow:
        command = program.file.commands[index]
        start, end = index + 1, program.ends[index]
        if command.name == "while":
            for _ in range(_MAX_LOOP_ITERATIONS):
                if not self.condition(command, frame):
                    return _Flow.NEXT
                flow = self._run(program, start, end, frame)
                if flow is _Flow.BREAK:
                    return _Flow.NEXT
                if flow is _Flow.RETURN:
                    return flow
            self.problems.append(ParseProblem(
                command.path, command.line,
                f"while() still running after {_MAX_LOOP_ITERATIONS} iterations; stopped"))
            return _Flow.NEXT
        values = self.expand(command.args, frame)
        if not values:
            return _Flow.NEXT
        variable, items = values[0], self._foreach_items(values[1:], command, frame)
        saved = frame.scope.own.get(variable)
        try:
            for item in items:
                frame.scope.set(variable, item)
                flow = self._run(program, start, end, frame)
                if flow is _Flow.BREAK:
                    break
                if flow is _Flow.RETURN:
                    return flow
        finally:
            # Since CMake 3.21 the loop variable is restored after the loop.
            if saved is None:
                frame.scope.own.pop(variable, None)
            else:
                frame.scope.own[variable] = saved
        return _Flow.NEXT

    def _foreach_items(self, rest: list[str], command: Command, frame: _Frame) -> list[str]:
        if rest[:1] == ["RANGE"]:
            try:
                numbers = [int(v) for v in rest[1:4]]
            except ValueError:
                self.problems.append(ParseProblem(command.path, command.line, "foreach(RANGE) with a non-integer"))
                return []
            start, stop, step = (0, numbers[0], 1) if len(numbers) == 1 else (*numbers[:2], numbers[2] if len(numbers) > 2 else 1)
            if step <= 0 or (stop - start) // step > _MAX_LOOP_ITERATIONS:
                self.problems.append(ParseProblem(command.path, command.line, "foreach(RANGE) too long; skipped"))
                return []
            return [str(v) for v in range(start, stop + 1, step)]
        if rest[:1] == ["IN"]:
            items: list[str] = []
            mode = None
            for word in rest[1:]:
                if word in ("LISTS", "ITEMS", "ZIP_LISTS"):
                    mode = word
                elif mode == "LISTS":
                    items.extend(split_list(self.lookup(frame, "", word)))
                elif mode == "ITEMS":
                    items.append(word)
            return items
        return rest

    def _block(self, program: _Program, index: int, frame: _Frame) -> _Flow:
        command = program.file.commands[index]
        values = self.expand(command.args, frame)
        propagate = values[values.index("PROPAGATE") + 1 :] if "PROPAGATE" in values else []
        scope = _Scope(frame.scope)
        flow = self._run(program, index + 1, program.ends[index], dataclasses.replace(frame, scope=scope))
        for name in propagate:
            entry = scope.get(name)
            if entry is None:
                frame.scope.unset(name)
            else:
                frame.scope.set(name, *entry)
        return flow

    def _return(self, command: Command, frame: _Frame) -> None:
        values = self.expand(command.args, frame)
        if values[:1] == ["PROPAGATE"] and frame.scope.parent is not None:
            for name in values[1:]:
                entry = frame.scope.get(name)
                if entry is None:
                    frame.scope.parent.unset(name)
                else:
                    frame.scope.parent.set(name, *entry)

    def _define(self, program: _Program, index: int, frame: _Frame) -> None:
        command = program.file.commands[index]
        values = self.expand(command.args, frame)
        if not values:
            return
        self.callables[values[0].lower()] = _Callable(
            values[0].lower(), tuple(values[1:]), command.name == "macro", program,
            index + 1, program.ends[index], command.path,
        )

    def _call(self, definition: _Callable, command: Command, frame: _Frame) -> _Flow:
        if self.depth >= _MAX_DEPTH:
            self.problems.append(ParseProblem(command.path, command.line,
                                              f"calls nested deeper than {_MAX_DEPTH} at {definition.name}()"))
            return _Flow.NEXT
        values = self.expand(command.args, frame)
        arguments = {
            "ARGC": str(len(values)),
            "ARGV": ";".join(values),
            "ARGN": ";".join(values[len(definition.parameters):]),
            **{f"ARGV{i}": v for i, v in enumerate(values)},
            **{p: (values[i] if i < len(values) else "") for i, p in enumerate(definition.parameters)},
        }
        call_sites = (*frame.call_sites, (command.path, command.line))
        self.depth += 1
        try:
            if definition.is_macro:
                inner = dataclasses.replace(frame, call_sites=call_sites, macro_arguments=arguments)
                return self._run(definition.program, definition.body_start, definition.body_end, inner)
            scope = _Scope(frame.scope)
            for name, value in arguments.items():
                scope.set(name, value)
            scope.set("CMAKE_CURRENT_FUNCTION", definition.name)
            scope.set("CMAKE_CURRENT_FUNCTION_LIST_FILE", posixpath.join(SOURCE_ROOT, definition.path))
            scope.set("CMAKE_CURRENT_FUNCTION_LIST_DIR",
                      posixpath.join(SOURCE_ROOT, posixpath.dirname(definition.path)).rstrip("/"))
            inner = _Frame(scope, frame.directory, frame.conditions, call_sites)
            self._run(definition.program, definition.body_start, definition.body_end, inner)
            return _Flow.NEXT
        finally:
            self.depth -= 1

    # -- conditions ----------------------------------------------------------------------
    def condition(self, command: Command, frame: _Frame) -> bool:
        tokens: list[_Token] = []
        for arg in command.args:
            if not arg.quoted and arg.text in ("(", ")"):
                tokens.append(_Token(arg.text, False, paren=True))
                continue
            value = self._expand_one(arg, frame)
            if arg.quoted:
                tokens.append(_Token(value, True))
            else:
                tokens.extend(_Token(element, False) for element in split_list(value))
        if not tokens:
            return False  # `if()` (e.g. `if(${UNDEFINED})`) is false, not an error
        try:
            return self._truth(self._reduce(tokens, frame), frame)
        except _ConditionError as error:
            self.problems.append(ParseProblem(command.path, command.line, f"{command.name}(): {error}"))
            return False

    def _reduce(self, tokens: list[_Token], frame: _Frame) -> _Token:
        # Parentheses first, innermost out.
        flat: list[_Token] = []
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
                inner = self._reduce(tokens[index + 1 : close - 1], frame)
                flat.append(_Token("", False, self._truth(inner, frame)))
                index = close
                continue
            if token.paren:
                raise _ConditionError("mismatched parenthesis")
            flat.append(token)
            index += 1
        flat = self._reduce_unary(flat, frame)
        flat = self._reduce_binary(flat, frame)
        # NOT binds tighter than AND, which binds tighter than OR.
        index = len(flat) - 2
        while index >= 0:
            if flat[index].is_keyword("NOT"):
                flat[index : index + 2] = [_Token("", False, not self._truth(flat[index + 1], frame))]
            index -= 1
        for keyword in ("AND", "OR"):
            index = 1
            while index < len(flat) - 1:
                if flat[index].is_keyword(keyword):
                    left, right = self._truth(flat[index - 1], frame), self._truth(flat[index + 1], frame)
                    flat[index - 1 : index + 2] = [_Token("", False, (left and right) if keyword == "AND" else (left or right))]
                else:
                    index += 1
        if len(flat) != 1:
            raise _ConditionError("unknown arguments " + " ".join(t.text for t in flat))
        return flat[0]

    def _reduce_unary(self, tokens: list[_Token], frame: _Frame) -> list[_Token]:
        index = 0
        while index < len(tokens) - 1:
            token = tokens[index]
            if token.is_keyword(*_UNARY):
                operand = tokens[index + 1].text
                tokens[index : index + 2] = [_Token("", False, self._unary(token.text, operand, frame))]
            index += 1
        return tokens

    def _unary(self, keyword: str, operand: str, frame: _Frame) -> bool:
        if keyword == "DEFINED":
            match = re.fullmatch(r"(ENV|CACHE)\{(.*)\}", operand)
            if match:
                store = self.environment if match.group(1) == "ENV" else self.cache
                return match.group(2) in store
            return self.defined(frame, operand)
        if keyword == "TARGET":
            return operand in self.targets
        if keyword == "COMMAND":
            return operand.lower() in self.callables or operand.lower() in self._handlers
        if keyword in ("EXISTS", "IS_DIRECTORY", "IS_READABLE", "IS_SYMLINK"):
            path = repo_path(operand) if operand.startswith("/") else None
            if path is None:
                return False
            if keyword == "IS_DIRECTORY":
                return self.tree.is_dir(path)
            return path == "" or self.tree.exists(path) or self.tree.is_dir(path)
        if keyword == "IS_ABSOLUTE":
            return operand.startswith("/") or bool(re.match(r"^[A-Za-z]:[/\\]", operand))
        return keyword == "POLICY"

    def _reduce_binary(self, tokens: list[_Token], frame: _Frame) -> list[_Token]:
        index = 0
        while index < len(tokens) - 2:
            keyword = tokens[index + 1]
            if keyword.is_keyword(*_BINARY):
                result = self._binary(keyword.text, tokens[index], tokens[index + 2], frame)
                tokens[index : index + 3] = [_Token("", False, result)]
            else:
                index += 1
        return tokens

    def _operand(self, token: _Token, frame: _Frame) -> str:
        if token.value is not None:
            return "1" if token.value else "0"
        if not token.quoted:
            entry = frame.scope.get(token.text)
            if entry is not None:
                return entry[0]
            if token.text in self.cache:
                return self.cache[token.text]
        return token.text

    def _binary(self, keyword: str, left_token: _Token, right_token: _Token, frame: _Frame) -> bool:
        left = self._operand(left_token, frame)
        if keyword == "MATCHES":
            try:
                match = re.search(right_token.text, left)
            except re.error:
                raise _ConditionError(f"bad regular expression {right_token.text!r}") from None
            if match:
                for group in range(10):
                    if group <= (match.re.groups or 0):
                        frame.scope.set(f"CMAKE_MATCH_{group}", match.group(group) or "")
                frame.scope.set("CMAKE_MATCH_COUNT", str(match.re.groups))
            return match is not None
        if keyword == "IN_LIST":
            return left in split_list(self.lookup(frame, "", right_token.text))
        right = self._operand(right_token, frame)
        if keyword in _COMPARISONS:
            try:
                return _COMPARISONS[keyword](float(left), float(right))
            except ValueError:
                return False
        if keyword.startswith("VERSION_"):
            comparison = _COMPARISONS[keyword[len("VERSION_"):]]
            return comparison(_version_key(left), _version_key(right))
        if keyword.startswith("STR"):
            comparison = {"STRLESS": operator.lt, "STRGREATER": operator.gt, "STREQUAL": operator.eq,
                          "STRLESS_EQUAL": operator.le, "STRGREATER_EQUAL": operator.ge}[keyword]
            return comparison(left, right)
        if keyword == "PATH_EQUAL":
            return posixpath.normpath(left) == posixpath.normpath(right)
        return False

    def _truth(self, token: _Token, frame: _Frame) -> bool:
        if token.value is not None:
            return token.value
        constant = _constant_truth(token.text)
        if constant is not None:
            return constant
        if token.quoted:
            return False
        entry = frame.scope.get(token.text)
        value = entry[0] if entry is not None else self.cache.get(token.text)
        return value is not None and not is_false_value(value)

    # -- location helpers ----------------------------------------------------------------
    @staticmethod
    def _place(command: Command, frame: _Frame, line: int | None = None) -> tuple[str, int, tuple[Location, ...]]:
        """Where a fact is reported: the outermost helper call site, or the command itself."""
        if frame.call_sites:
            path, call_line = frame.call_sites[0]
            return path, call_line, (*frame.call_sites[1:], (command.path, command.line))
        return command.path, line if line is not None else command.line, ()

    def _resolve(self, path: str, frame: _Frame) -> str:
        if not path.startswith("/") and not re.match(r"^[A-Za-z]:/", path) and not path.startswith("$<"):
            path = posixpath.join(frame.directory.source_dir, path)
        return posixpath.normpath(path) if not path.startswith("$<") else path

    def _target(self, name: str, command: Command) -> _TargetBuilder | None:
        target = self.targets.get(name)
        if target is None:
            self.problems.append(ParseProblem(command.path, command.line,
                                              f"{command.name}(): target {name!r} is not defined"))
        elif target.alias_of is not None:
            return self.targets.get(target.alias_of)
        return target

    # -- commands ------------------------------------------------------------------------
    def _command_handlers(self) -> dict[str, Callable[[Command, _Frame], None]]:
        return {
            "set": self._set,
            "unset": self._unset,
            "option": self._option,
            "cmake_dependent_option": self._dependent_option,
            "list": self._list,
            "string": self._string,
            "math": self._math,
            "file": self._file,
            "get_filename_component": self._get_filename_component,
            "cmake_path": self._cmake_path,
            "cmake_parse_arguments": self._parse_arguments,
            "include": self._include,
            "include_guard": lambda command, frame: None,
            "add_subdirectory": self._add_subdirectory,
            "project": self._project,
            "message": self._message,
            "execute_process": self._execute_process,
            "add_library": self._add_library,
            "add_executable": self._add_executable,
            "add_custom_target": self._add_custom_target,
            "target_sources": self._target_sources,
            "target_link_libraries": self._target_usage("link_libraries"),
            "target_link_options": self._target_usage("link_options"),
            "target_compile_definitions": self._target_usage("compile_definitions"),
            "target_compile_options": self._target_usage("compile_options"),
            "target_include_directories": self._target_usage("include_directories"),
            "set_target_properties": self._set_target_properties,
            "set_property": self._set_property,
            "get_target_property": self._get_target_property,
            "get_property": self._get_property,
            "install": self._install,
            "add_definitions": self._directory_usage("compile_definitions"),
            "add_compile_definitions": self._directory_usage("compile_definitions"),
            "add_compile_options": self._directory_usage("compile_options"),
            "include_directories": self._directory_usage("include_directories"),
            "link_libraries": self._directory_usage("link_libraries"),
        }

    def _set(self, command: Command, frame: _Frame) -> None:
        if not command.args:
            return
        name = self._expand_one(command.args[0], frame)
        items = self.expand_items(command.args[1:], frame)
        words = [item.value for item in items]
        if name.startswith("ENV{") and name.endswith("}"):
            self.environment[name[4:-1]] = words[0] if words else ""
            return
        if "CACHE" in words and len(words) - words.index("CACHE") >= 3:
            at = len(words) - 1 - words[::-1].index("CACHE")
            kind, force = words[at + 1], "FORCE" in words[at + 3 :]
            if force or kind == "INTERNAL" or name not in self.cache:
                self.cache[name] = ";".join(words[:at])
            if kind in ("BOOL", "STRING", "PATH", "FILEPATH"):
                self.option_names[name] = None
            return
        parent_scope = bool(words) and words[-1] == "PARENT_SCOPE"
        if parent_scope:
            items = items[:-1]
        value = ";".join(item.value for item in items)
        origins = tuple(
            tuple(dict.fromkeys((*item.origins, *frame.conditions))) for item in items
        ) if items else None
        if parent_scope:
            if frame.scope.parent is not None:
                frame.scope.pin(name)
                frame.scope.parent.set(name, value, origins)
        elif not items:
            frame.scope.unset(name)
        else:
            frame.scope.set(name, value, origins)

    def _unset(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        name = words[0]
        if "CACHE" in words[1:]:
            self.cache.pop(name, None)
        elif "PARENT_SCOPE" in words[1:]:
            if frame.scope.parent is not None:
                frame.scope.pin(name)
                frame.scope.parent.unset(name)
        elif name.startswith("ENV{"):
            self.environment.pop(name[4:-1], None)
        else:
            frame.scope.unset(name)

    def _option(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        name = words[0]
        self.option_names[name] = None
        # CMP0077 (NEW since 3.13): a normal variable of the same name wins.
        if frame.scope.get(name) is not None or name in self.cache:
            return
        default = words[2] if len(words) > 2 else "OFF"
        self.cache[name] = "ON" if not is_false_value(default) else "OFF"

    def _dependent_option(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 5:
            return
        name, _doc, default, depends, force = words[:5]
        self.option_names[name] = None
        satisfied = True
        for dependency in split_list(depends):
            probe = Command("if", tuple(Arg(w, False, command.line) for w in dependency.split()),
                            command.line, command.line, command.path)
            satisfied = satisfied and self.condition(probe, frame)
        if satisfied:
            if name not in self.cache:
                self.cache[name] = "ON" if not is_false_value(default) else "OFF"
        else:
            frame.scope.set(name, force)

    def _list(self, command: Command, frame: _Frame) -> None:
        if len(command.args) < 2:
            return
        operation = self._expand_one(command.args[0], frame).upper()
        name = self._expand_one(command.args[1], frame)
        items = self.expand_items(command.args[2:], frame)
        words = [item.value for item in items]
        entry = frame.scope.get(name)
        current = split_list(entry[0]) if entry is not None else []
        origins: list[tuple[str, ...]] | None = None
        if entry is not None and entry[1] is not None and len(entry[1]) == len(current):
            origins = list(entry[1])
        elif entry is None or not current:
            origins = []

        def added() -> list[tuple[str, ...]]:
            return [tuple(dict.fromkeys((*item.origins, *frame.conditions))) for item in items]

        def store(values: list[str], new_origins: list[tuple[str, ...]] | None = None) -> None:
            frame.scope.set(name, ";".join(values), tuple(new_origins) if new_origins is not None else None)

        if operation == "APPEND":
            store(current + words, origins + added() if origins is not None else None)
        elif operation == "PREPEND":
            store(words + current, added() + origins if origins is not None else None)
        elif operation == "INSERT" and words:
            try:
                at = int(words[0])
            except ValueError:
                return
            new = added()[1:]
            store(current[:at] + words[1:] + current[at:],
                  origins[:at] + new + origins[at:] if origins is not None else None)
        elif operation == "REMOVE_ITEM":
            keep = [i for i, value in enumerate(current) if value not in words]
            store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
        elif operation == "REMOVE_DUPLICATES":
            seen: dict[str, int] = {}
            for i, value in enumerate(current):
                seen.setdefault(value, i)
            keep = sorted(seen.values())
            store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
        elif operation == "REMOVE_AT":
            drop = {int(w) % len(current) for w in words if re.fullmatch(r"-?\d+", w) and current}
            store([v for i, v in enumerate(current) if i not in drop])
        elif operation == "LENGTH" and words:
            frame.scope.set(words[0], str(len(current)))
        elif operation == "GET" and len(words) >= 2:
            picked = [current[int(i)] for i in words[:-1] if re.fullmatch(r"-?\d+", i) and -len(current) <= int(i) < len(current)]
            frame.scope.set(words[-1], ";".join(picked))
        elif operation == "FIND" and len(words) >= 2:
            frame.scope.set(words[1], str(current.index(words[0]) if words[0] in current else -1))
        elif operation == "JOIN" and len(words) >= 2:
            frame.scope.set(words[1], words[0].join(current))
        elif operation == "SORT":
            store(sorted(current))
        elif operation == "REVERSE":
            store(current[::-1], origins[::-1] if origins is not None else None)
        elif operation == "FILTER" and len(words) >= 3 and words[1] == "REGEX":
            keep_matching = words[0] == "INCLUDE"
            keep = [i for i, v in enumerate(current) if bool(re.search(words[2], v)) == keep_matching]
            store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
        elif operation in ("POP_BACK", "POP_FRONT"):
            taken = current[-1:] if operation == "POP_BACK" else current[:1]
            rest = current[:-1] if operation == "POP_BACK" else current[1:]
            store(rest)
            if words and taken:
                frame.scope.set(words[0], taken[0])

    def _string(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 2:
            return
        operation = words[0].upper()
        set_variable = frame.scope.set
        if operation in ("APPEND", "PREPEND"):
            current = self.lookup(frame, "", words[1])
            addition = "".join(words[2:])
            set_variable(words[1], current + addition if operation == "APPEND" else addition + current)
        elif operation == "REPLACE" and len(words) >= 4:
            set_variable(words[3], "".join(words[4:]).replace(words[1], words[2]) if words[1] else "".join(words[4:]))
        elif operation == "REGEX" and len(words) >= 4:
            mode, pattern = words[1].upper(), words[2]
            try:
                if mode == "REPLACE" and len(words) >= 5:
                    replacement = re.sub(r"\\(\d)", r"\\g<\1>", words[3])
                    set_variable(words[4], re.sub(pattern, replacement, "".join(words[5:])))
                elif mode == "MATCH":
                    match = re.search(pattern, "".join(words[4:]))
                    set_variable(words[3], match.group(0) if match else "")
                    if match:
                        for group in range(min(10, (match.re.groups or 0) + 1)):
                            set_variable(f"CMAKE_MATCH_{group}", match.group(group) or "")
                elif mode == "MATCHALL":
                    set_variable(words[3], ";".join(m.group(0) for m in re.finditer(pattern, "".join(words[4:]))))
            except (re.error, IndexError):
                self.problems.append(ParseProblem(command.path, command.line, f"string(REGEX): cannot use {pattern!r}"))
        elif operation in ("TOLOWER", "TOUPPER") and len(words) >= 3:
            set_variable(words[2], words[1].lower() if operation == "TOLOWER" else words[1].upper())
        elif operation == "LENGTH" and len(words) >= 3:
            set_variable(words[2], str(len(words[1])))
        elif operation == "STRIP" and len(words) >= 3:
            set_variable(words[2], words[1].strip())
        elif operation == "SUBSTRING" and len(words) >= 5:
            begin, length = int(words[2]), int(words[3])
            set_variable(words[4], words[1][begin:] if length < 0 else words[1][begin : begin + length])
        elif operation == "FIND" and len(words) >= 4:
            position = words[1].rfind(words[2]) if "REVERSE" in words[4:] else words[1].find(words[2])
            set_variable(words[3], str(position))
        elif operation == "JOIN" and len(words) >= 3:
            set_variable(words[2], words[1].join(words[3:]))
        elif operation == "CONCAT":
            set_variable(words[1], "".join(words[2:]))
        elif operation == "GENEX_STRIP" and len(words) >= 3:
            set_variable(words[2], re.sub(r"\$<[^<>]*>", "", words[1]))
        elif operation == "COMPARE" and len(words) >= 5:
            comparison = {"EQUAL": operator.eq, "NOTEQUAL": operator.ne, "LESS": operator.lt,
                          "GREATER": operator.gt, "LESS_EQUAL": operator.le,
                          "GREATER_EQUAL": operator.ge}.get(words[1].upper())
            if comparison:
                set_variable(words[4], "1" if comparison(words[2], words[3]) else "0")

    def _math(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) >= 3 and words[0] == "EXPR":
            value = integer_expression(words[2])
            if value is None:
                self.problems.append(ParseProblem(command.path, command.line, f"math(EXPR): cannot evaluate {words[2]!r}"))
                return
            frame.scope.set(words[1], hex(value) if "HEXADECIMAL" in words[3:] else str(value))

    def _file(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 2:
            return
        operation = words[0].upper()
        if operation in ("GLOB", "GLOB_RECURSE") and len(words) >= 2:
            rest = words[2:]
            relative = None
            patterns = []
            skip = False
            for position, word in enumerate(rest):
                if skip:
                    skip = False
                    continue
                if word in ("RELATIVE", "LIST_DIRECTORIES"):
                    if word == "RELATIVE" and position + 1 < len(rest):
                        relative = rest[position + 1]
                    skip = True
                elif word not in ("CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"):
                    patterns.append(self._resolve(word, frame))
            found = self._glob(patterns, recursive=operation == "GLOB_RECURSE")
            if relative is not None:
                found = [posixpath.relpath(f, relative) for f in found]
            frame.scope.set(words[1], ";".join(found))
        elif operation == "READ" and len(words) >= 3:
            path = repo_path(self._resolve(words[1], frame))
            data = self.tree.read_text(path) if path else None
            frame.scope.set(words[2], data or "")
        elif operation == "RELATIVE_PATH" and len(words) >= 4:
            # CMake treats an empty path as the current directory; relpath() would refuse it.
            frame.scope.set(words[1], posixpath.relpath(words[3] or ".", words[2] or "."))
        elif operation == "TO_CMAKE_PATH" and len(words) >= 3:
            frame.scope.set(words[2], words[1].replace("\\", "/"))

    def _paths(self) -> tuple[str, ...]:
        if self._all_paths is None:
            self._all_paths = self.tree.paths()
        return self._all_paths

    def _glob(self, patterns: list[str], recursive: bool) -> list[str]:
        found: dict[str, None] = {}
        for pattern in patterns:
            relative = repo_path(pattern)
            if relative is None:
                continue
            directory, name = posixpath.split(relative)
            # GLOB_RECURSE matches the file pattern in every directory below the given one.
            middle = "(?:.*/)?" if recursive else ""
            prefix = _glob_regex(directory) + "/" if directory else ""
            regex = re.compile(prefix + middle + _glob_regex(name) + r"\Z")
            for path in self._paths():
                if regex.match(path):
                    found[posixpath.join(SOURCE_ROOT, path)] = None
        return sorted(found)

    def _get_filename_component(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 3:
            return
        variable, path, mode = words[0], words[1], words[2].upper()
        name = posixpath.basename(path)
        results = {
            "NAME": name,
            "DIRECTORY": posixpath.dirname(path),
            "PATH": posixpath.dirname(path),
            "NAME_WE": name.split(".", 1)[0],
            "NAME_WLE": name.rsplit(".", 1)[0] if "." in name else name,
            "EXT": "." + name.split(".", 1)[1] if "." in name else "",
            "LAST_EXT": "." + name.rsplit(".", 1)[1] if "." in name else "",
            "ABSOLUTE": self._resolve(path, frame),
            "REALPATH": self._resolve(path, frame),
        }
        if mode in results:
            frame.scope.set(variable, results[mode])

    def _cmake_path(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 3:
            return
        operation, variable = words[0], words[1]
        path = self.lookup(frame, "", variable)
        if operation == "GET" and len(words) >= 4:
            name = posixpath.basename(path)
            parts = {
                "FILENAME": name,
                "STEM": name.split(".", 1)[0] if not name.startswith(".") else name,
                "EXTENSION": "." + name.split(".", 1)[1] if "." in name.lstrip(".") else "",
                "PARENT_PATH": posixpath.dirname(path),
                "ROOT_PATH": "/" if path.startswith("/") else "",
                "RELATIVE_PART": path.lstrip("/"),
            }
            if words[2] in parts:
                frame.scope.set(words[-1], parts[words[2]])
        elif operation in ("SET", "APPEND"):
            pieces = [w for w in words[2:] if w not in ("NORMALIZE", "OUTPUT_VARIABLE")]
            out = words[words.index("OUTPUT_VARIABLE") + 1] if "OUTPUT_VARIABLE" in words[:-1] else variable
            pieces = [p for p in pieces if p != out or "OUTPUT_VARIABLE" not in words]
            value = posixpath.join(path, *pieces) if operation == "APPEND" else (pieces[0] if pieces else "")
            frame.scope.set(out, posixpath.normpath(value) if "NORMALIZE" in words else value)
        elif operation == "NORMAL_PATH":
            out = words[words.index("OUTPUT_VARIABLE") + 1] if "OUTPUT_VARIABLE" in words[:-1] else variable
            frame.scope.set(out, posixpath.normpath(path) if path else "")

    def _parse_arguments(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if words[:1] == ["PARSE_ARGV"]:
            if len(words) < 6:
                return
            first = int(words[1]) if words[1].isdigit() else 0
            prefix, options, singles, multis = words[2], words[3], words[4], words[5]
            count = int(self.lookup(frame, "", "ARGC") or 0)
            arguments = [self.lookup(frame, "", f"ARGV{i}") for i in range(first, count)]
        else:
            # The keyword lists may be empty strings, which expand() drops; read them raw.
            if len(command.args) < 4:
                return
            prefix, options, singles, multis = (self._expand_one(a, frame) for a in command.args[:4])
            arguments = self.expand(command.args[4:], frame)
        option_names, single_names, multi_names = split_list(options), split_list(singles), split_list(multis)
        keywords = set(option_names) | set(single_names) | set(multi_names)
        results: dict[str, list[str] | None] = {name: None for name in (*single_names, *multi_names)}
        flags = {name: False for name in option_names}
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

    def _include(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        target = words[0]
        optional = "OPTIONAL" in words[1:]
        result_variable = words[words.index("RESULT_VARIABLE") + 1] if "RESULT_VARIABLE" in words[:-1] else None
        path = self._module_path(target, frame)
        if result_variable:
            frame.scope.set(result_variable, posixpath.join(SOURCE_ROOT, path) if path else "NOTFOUND")
        if path is None:
            if ("/" in target or target.endswith(".cmake")) and not optional:
                self.skipped.append(ParseProblem(command.path, command.line, f"include: {target} is not in the tree"))
            return
        if path in self.include_guarded:
            return
        program = _program_for(self.tree.blob_id(path), self.tree.read(path) or b"", path)
        if any(c.name == "include_guard" for c in program.file.commands):
            self.include_guarded.add(path)
        self.run_file(path, frame, command)

    def _module_path(self, target: str, frame: _Frame) -> str | None:
        """The repository path include() would read, or None (a CMake built-in module)."""
        if "/" in target or target.endswith(".cmake"):
            resolved = repo_path(self._resolve(target, frame))
            return resolved if resolved is not None and self.tree.exists(resolved) else None
        module_dirs = split_list(self.lookup(frame, "", "CMAKE_MODULE_PATH"))
        for directory in module_dirs:
            resolved = repo_path(posixpath.join(self._resolve(directory, frame), target + ".cmake"))
            if resolved is not None and self.tree.exists(resolved):
                return resolved
        fallback = f"tools/cmake/{target}.cmake"
        return fallback if self.tree.exists(fallback) else None

    def _add_subdirectory(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        directory = repo_path(self._resolve(words[0], frame))
        if directory is None:
            self.skipped.append(ParseProblem(command.path, command.line, f"add_subdirectory: {words[0]} is outside the tree"))
            return
        self.add_subdirectory(directory, dataclasses.replace(frame, call_sites=(), macro_arguments=None), command)

    def _project(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        source_dir = frame.directory.source_dir
        values = {
            "PROJECT_NAME": words[0],
            "PROJECT_SOURCE_DIR": source_dir,
            "PROJECT_BINARY_DIR": frame.directory.binary_dir,
            f"{words[0]}_SOURCE_DIR": source_dir,
            f"{words[0]}_BINARY_DIR": frame.directory.binary_dir,
        }
        if "VERSION" in words[1:-1]:
            values["PROJECT_VERSION"] = words[words.index("VERSION") + 1]
        if not self.defined(frame, "CMAKE_PROJECT_NAME"):
            values["CMAKE_PROJECT_NAME"] = words[0]
        for name, value in values.items():
            frame.scope.set(name, value)

    def _message(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if words and words[0] in ("FATAL_ERROR", "SEND_ERROR"):
            text = "".join(words[1:])
            self.problems.append(ParseProblem(command.path, command.line,
                                              f"message({words[0]}) reached under profile {self.profile.name}: {text[:200]}"))

    def _execute_process(self, command: Command, frame: _Frame) -> None:
        # Nothing runs here: report success with empty output so scripts take their usual path.
        words = self.expand(command.args, frame)
        for keyword, value in (("RESULT_VARIABLE", "0"), ("OUTPUT_VARIABLE", ""), ("ERROR_VARIABLE", "")):
            if keyword in words[:-1]:
                frame.scope.set(words[words.index(keyword) + 1], value)

    # -- targets -------------------------------------------------------------------------
    def _new_target(self, name: str, kind: str, command: Command, frame: _Frame, **extra: object) -> _TargetBuilder:
        path, line, via = self._place(command, frame)
        target = _TargetBuilder(name, kind, path, line, _join_conditions(frame.conditions), via, **extra)
        if kind not in ("ALIAS", "UTILITY") and not target.imported:
            directory = frame.directory
            target.compile_definitions.extend(directory.compile_definitions)
            target.compile_options.extend(directory.compile_options)
            target.include_directories.extend(directory.include_directories)
            target.link_libraries.extend(directory.link_libraries)
        if name in self.targets and not self.targets[name].imported:
            self.problems.append(ParseProblem(command.path, command.line, f"target {name!r} is defined twice"))
        self.targets[name] = target
        return target

    def _add_sources(self, target: _TargetBuilder, items: Sequence[_Item], command: Command, frame: _Frame) -> None:
        context = self._genex_context(None)
        path, line, via = self._place(command, frame)
        for item in items:
            for value in split_list(evaluate_generator_expressions(item.value, context)):
                resolved = self._resolve(value, frame)
                relative = repo_path(resolved)
                condition = _join_conditions((*frame.conditions, *item.origins))
                target.sources.append(CMakeSource(
                    relative if relative is not None else value, condition, path,
                    line if frame.call_sites else item.line, via))

    def _add_library(self, command: Command, frame: _Frame) -> None:
        items = self.expand_items(command.args, frame)
        if not items:
            return
        name = items[0].value
        words = [item.value for item in items[1:]]
        if words[:1] == ["ALIAS"] and len(words) >= 2:
            self._new_target(name, "ALIAS", command, frame, alias_of=words[1])
            return
        kind = None
        if words and words[0] in _LIBRARY_KINDS:
            kind = _LIBRARY_KINDS[words[0]]
        imported = "IMPORTED" in words[:3]
        if kind is None:
            shared = not is_false_value(self.lookup(frame, "", "BUILD_SHARED_LIBS"))
            kind = "SHARED_LIBRARY" if shared else "STATIC_LIBRARY"
        target = self._new_target(name, kind, command, frame, imported=imported)
        if not imported:
            skip = {"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL", "GLOBAL", "UNKNOWN"}
            sources = [item for item in items[1:] if item.value not in skip]
            self._add_sources(target, sources, command, frame)

    def _add_executable(self, command: Command, frame: _Frame) -> None:
        items = self.expand_items(command.args, frame)
        if not items:
            return
        words = [item.value for item in items[1:]]
        if words[:1] == ["ALIAS"] and len(words) >= 2:
            self._new_target(items[0].value, "ALIAS", command, frame, alias_of=words[1])
            return
        imported = "IMPORTED" in words[:2]
        target = self._new_target(items[0].value, "EXECUTABLE", command, frame, imported=imported)
        if not imported:
            sources = [item for item in items[1:] if item.value not in ("WIN32", "MACOSX_BUNDLE", "EXCLUDE_FROM_ALL")]
            self._add_sources(target, sources, command, frame)

    def _add_custom_target(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args[:1], frame)
        if words:
            self._new_target(words[0], "UTILITY", command, frame)

    def _target_sources(self, command: Command, frame: _Frame) -> None:
        items = self.expand_items(command.args, frame)
        if not items:
            return
        target = self._target(items[0].value, command)
        if target is None:
            return
        sources: list[_Item] = []
        file_set_keyword = None
        for item in items[1:]:
            value = item.value
            if value in _SCOPE_KEYWORDS:
                file_set_keyword = None
            elif value in ("FILE_SET", "TYPE", "BASE_DIRS", "FILES"):
                file_set_keyword = value
            elif file_set_keyword in ("FILE_SET", "TYPE"):
                file_set_keyword = None
            elif file_set_keyword == "BASE_DIRS":
                continue
            else:
                sources.append(item)
        self._add_sources(target, sources, command, frame)

    def _genex_context(self, language: str | None) -> GenexContext:
        profile = self.profile
        return GenexContext(profile.compiler_id, profile.platform, profile.cuda, language)

    def _usage_items(
        self, items: Sequence[_Item], scope: str, command: Command, frame: _Frame, per_language: bool,
        transform: Callable[[str], str | None] = lambda value: value,
    ) -> list[Scoped]:
        """Evaluate generator expressions over one scope group and make Scoped values.

        A generator expression may span list elements (`$<cond:-a;-b>` written unquoted
        across arguments), so elements are chunked until every `$<` is closed.
        """
        path, call_line, via = self._place(command, frame)
        condition = _join_conditions(frame.conditions)
        results: list[Scoped] = []
        for chunk_text, line in _genex_chunks(items):
            line = call_line if frame.call_sites else line
            languages: Sequence[str | None]
            if per_language and _is_language_dependent(chunk_text):
                languages = _LANGUAGES
            else:
                languages = (None,)
            evaluated = [
                [v for v in split_list(evaluate_generator_expressions(chunk_text, self._genex_context(lang)))]
                for lang in languages
            ]
            for value, value_languages in _merge_languages(evaluated, languages):
                transformed = transform(value)
                if transformed:
                    results.append(Scoped(transformed, scope, path, line, condition, value_languages, via))
        return results

    def _target_usage(self, field_name: str) -> Callable[[Command, _Frame], None]:
        per_language = field_name in ("compile_definitions", "compile_options", "include_directories")

        def handler(command: Command, frame: _Frame) -> None:
            items = self.expand_items(command.args, frame)
            if not items:
                return
            target = self._target(items[0].value, command)
            if target is None:
                return
            default_scope = "PUBLIC" if field_name == "link_libraries" else "PRIVATE"
            if target.kind == "INTERFACE_LIBRARY":
                default_scope = "INTERFACE"
            groups = _scope_groups(items[1:], default_scope)
            transform = self._usage_transform(field_name, frame)
            collected = getattr(target, field_name)
            for scope, group in groups:
                collected.extend(self._usage_items(group, scope, command, frame, per_language, transform))

        return handler

    def _usage_transform(self, field_name: str, frame: _Frame) -> Callable[[str], str | None]:
        if field_name == "compile_definitions":
            return lambda value: value[2:] if value.startswith("-D") else value
        if field_name == "include_directories":
            return lambda value: self._resolve(value, frame) if not value.startswith("$<") else value
        if field_name == "link_libraries":
            skip = {"debug", "optimized", "general"}
            return lambda value: None if value in skip else value
        return lambda value: value

    def _directory_usage(self, field_name: str) -> Callable[[Command, _Frame], None]:
        def handler(command: Command, frame: _Frame) -> None:
            items = self.expand_items(command.args, frame)
            if command.name == "include_directories":
                items = [i for i in items if i.value not in ("AFTER", "BEFORE", "SYSTEM")]
            if command.name == "add_definitions":
                # add_definitions takes flags: -D goes to definitions, the rest to options.
                definitions = [i for i in items if re.match(r"^[-/]D", i.value)]
                others = [i for i in items if not re.match(r"^[-/]D", i.value)]
                frame.directory.compile_definitions.extend(self._usage_items(
                    definitions, "PRIVATE", command, frame, True, lambda v: v[2:]))
                frame.directory.compile_options.extend(self._usage_items(others, "PRIVATE", command, frame, True))
                return
            transform = self._usage_transform(field_name, frame)
            getattr(frame.directory, field_name).extend(
                self._usage_items(items, "PRIVATE", command, frame, field_name != "link_libraries", transform))

        return handler

    def _set_target_properties(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if "PROPERTIES" not in words:
            return
        at = words.index("PROPERTIES")
        pairs = list(zip(words[at + 1 :: 2], words[at + 2 :: 2]))
        for name in words[:at]:
            target = self._target(name, command)
            if target is not None:
                for key, value in pairs:
                    self._store_property(target, key, value, False, command, frame)

    def _set_property(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words or "PROPERTY" not in words:
            return
        at = words.index("PROPERTY")
        if at + 1 >= len(words):
            return
        key, values = words[at + 1], words[at + 2 :]
        append = "APPEND" in words[:at] or "APPEND_STRING" in words[:at]
        if words[0] == "GLOBAL":
            current = self.global_properties.get(key, "")
            joined = ";".join(values)
            self.global_properties[key] = (current + (";" if current and joined else "") + joined) if append else joined
        elif words[0] == "TARGET":
            for name in words[1:at]:
                if name in ("APPEND", "APPEND_STRING"):
                    continue
                target = self._target(name, command)
                if target is not None:
                    self._store_property(target, key, ";".join(values), append, command, frame)

    def _store_property(self, target: _TargetBuilder, key: str, value: str, append: bool,
                        command: Command, frame: _Frame) -> None:
        usage = _USAGE_PROPERTIES.get(key)
        if usage is None:
            current = target.properties.get(key)
            target.properties[key] = f"{current};{value}" if append and current else value
            return
        field_name, scope = usage
        collected: list[Scoped] = getattr(target, field_name)
        if not append:
            # PUBLIC items stand for both properties; replacing one leaves the other half.
            other = "INTERFACE" if scope == "PRIVATE" else "PRIVATE"
            kept = []
            for item in collected:
                if item.scope == scope:
                    continue
                kept.append(dataclasses.replace(item, scope=other) if item.scope == "PUBLIC" else item)
            collected[:] = kept
        items = [_Item(v, command.line) for v in split_list(value)]
        collected.extend(self._usage_items(items, scope, command, frame, field_name != "link_libraries",
                                           self._usage_transform(field_name, frame)))

    def _property_value(self, target: _TargetBuilder, key: str) -> str | None:
        if key == "TYPE":
            return target.kind
        if key == "NAME":
            return target.name
        if key == "IMPORTED":
            return "TRUE" if target.imported else "FALSE"
        if key == "ALIASED_TARGET":
            return target.alias_of
        if key == "SOURCES":
            return ";".join(s.path_repo_relative for s in target.sources)
        usage = _USAGE_PROPERTIES.get(key)
        if usage is not None:
            field_name, scope = usage
            values = [i.value for i in getattr(target, field_name) if i.scope in (scope, "PUBLIC")]
            return ";".join(values) if values else None
        return target.properties.get(key)

    def _get_target_property(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 3:
            return
        target = self.targets.get(words[1])
        value = self._property_value(target, words[2]) if target is not None else None
        frame.scope.set(words[0], value if value is not None else f"{words[0]}-NOTFOUND")

    def _get_property(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if len(words) < 4 or "PROPERTY" not in words:
            return
        key = words[words.index("PROPERTY") + 1] if words.index("PROPERTY") + 1 < len(words) else ""
        value: str | None = None
        if words[1] == "GLOBAL":
            value = self.global_properties.get(key)
        elif words[1] == "TARGET" and len(words) > 2:
            target = self.targets.get(words[2])
            value = self._property_value(target, key) if target is not None else None
        if value is None:
            frame.scope.unset(words[0]) if words[1] == "GLOBAL" else frame.scope.set(words[0], "")
        else:
            frame.scope.set(words[0], value)

    def _install(self, command: Command, frame: _Frame) -> None:
        words = self.expand(command.args, frame)
        if not words:
            return
        mode = words[0]
        named = []
        for word in words[1:]:
            if word in _INSTALL_KEYWORDS:
                break
            named.append(word)
        destination = words[words.index("DESTINATION") + 1] if "DESTINATION" in words[:-1] else ""
        condition = _join_conditions(frame.conditions)
        path, line, _via = self._place(command, frame)
        if mode == "TARGETS":
            for name in named:
                target = self._target(name, command)
                if target is not None:
                    target.installed = True
        elif mode in ("FILES", "PROGRAMS"):
            for name in named:
                relative = repo_path(self._resolve(name, frame))
                if relative is not None:
                    self.installed_files.append(InstalledFile(relative, path, line, destination, condition))
        elif mode == "DIRECTORY":
            for directory in named:
                for relative in self._directory_files(directory, words, frame):
                    self.installed_files.append(InstalledFile(relative, path, line, destination, condition))

    def _directory_files(self, directory: str, words: list[str], frame: _Frame) -> list[str]:
        base = repo_path(self._resolve(directory, frame))
        if base is None:
            return []
        prefix = f"{base}/" if base else ""
        include: list[tuple[str, str]] = []
        exclude: list[tuple[str, str]] = []
        for position, word in enumerate(words):
            if word in ("PATTERN", "REGEX") and position + 1 < len(words):
                rule = (word, words[position + 1])
                is_excluded = position + 2 < len(words) and words[position + 2] == "EXCLUDE"
                (exclude if is_excluded else include).append(rule)
        files_matching = "FILES_MATCHING" in words

        def matches(path: str, rule: tuple[str, str]) -> bool:
            kind, pattern = rule
            if kind == "REGEX":
                try:
                    return re.search(pattern, path) is not None
                except re.error:
                    return False
            return fnmatch.fnmatchcase(posixpath.basename(path), pattern) or fnmatch.fnmatchcase(path, "*/" + pattern)

        chosen = []
        for path in self._paths():
            if not path.startswith(prefix):
                continue
            if files_matching and not any(matches(path, rule) for rule in include):
                continue
            if any(matches(path, rule) for rule in exclude):
                continue
            chosen.append(path)
        return chosen


def _glob_regex(pattern: str) -> str:
    """A file(GLOB) pattern as a regex where `*` and `?` stay inside one path component."""
    parts = []
    for char in pattern:
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(char))
    return "".join(parts)


def _scope_groups(items: Sequence[_Item], default_scope: str) -> list[tuple[str, list[_Item]]]:
    """Split target_* arguments at PUBLIC/PRIVATE/INTERFACE (and the legacy LINK_* keywords)."""
    groups: list[tuple[str, list[_Item]]] = []
    scope = default_scope
    current: list[_Item] = []
    for item in items:
        if item.value in _SCOPE_KEYWORDS:
            if current:
                groups.append((scope, current))
            scope, current = _SCOPE_KEYWORDS[item.value], []
        elif item.value in ("BEFORE", "AFTER", "SYSTEM") and not current:
            continue
        else:
            current.append(item)
    if current:
        groups.append((scope, current))
    return groups


def _genex_chunks(items: Sequence[_Item]) -> list[tuple[str, int]]:
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


def _merge_languages(
    evaluated: Sequence[Sequence[str]], languages: Sequence[str | None]
) -> list[tuple[str, str | None]]:
    """Items from per-language evaluations; an item present for every language gets None."""
    if len(languages) == 1:
        return [(value, None) for value in evaluated[0]]
    order: dict[str, list[str]] = {}
    for language, values in zip(languages, evaluated):
        for value in values:
            present = order.setdefault(value, [])
            if language not in present:
                present.append(language)  # type: ignore[arg-type]
    merged = []
    for value, present in order.items():
        merged.append((value, None if len(present) == len(languages) else ",".join(present)))
    return merged


_ARITHMETIC = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


def integer_expression(text: str) -> int | None:
    """math(EXPR)'s integer arithmetic (+ - * / % | & ^ ~ << >> and parentheses), or None."""
    # CMake's `/` is integer division; Python's `//` is the same for the non-negative case.
    try:
        tree = ast.parse(text.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else (~operand if isinstance(node.op, ast.Invert) else operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.left), value(node.right))
        raise ValueError(node)

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError):
        return None
