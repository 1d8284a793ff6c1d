"""What a CMake evaluation produces: targets with scoped usage requirements, installs, problems.

Paths inside the model are what CMake would see, under the virtual roots `SOURCE_ROOT` and
`BINARY_ROOT`; `repo_path` turns one back into a repository path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from bot.cmake.profiles import CMakeProfile
from bot.cmake.syntax import ParseProblem

# ExecuTorch requires its checkout to be a directory named `executorch` (its root
# CMakeLists.txt checks) and puts the parent on the include path for <executorch/...>.
SOURCE_ROOT = "/src/executorch"
BINARY_ROOT = "/build"

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
class ExtractedSources:
    """What `extract_sources.py --config=<config>` writes: the `_<name>__srcs` lists, in the config's order.

    ExecuTorch's CMake took its source lists from a file that script generated at configure time from
    buck2 queries (before 2a692c2da9); the model runs no process, so the lists are computed from the
    Buck model beforehand (bot/facts/extracted_sources.py) and handed to the evaluation. `failure` is
    why the script would fail (an unknown list name in `deps`, a bad regular expression), else None.
    """

    config: str  # the repository path of the TOML file
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, sorted repository paths)
    failure: str | None = None

    def variables(self) -> tuple[tuple[str, str], ...]:
        """(variable, value) pairs the generated file sets: `_<name>__srcs` to the joined list."""
        return tuple((f"_{name}__srcs", ";".join(paths)) for name, paths in self.lists)


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
    (a missing subdirectory or included file: submodules are not in the tree). `limits` are
    the problems where a budget ran out (steps, loop iterations, nesting, value size, regular
    expression time): each is also in `problems`, and the model is incomplete from there on.
    `processes_not_run` are the execute_process() calls the model took as succeeding with empty
    output (all but the source-list scripts it evaluates, commands/processes.py). `generated` are
    the files such a script wrote and the evaluation included (repository-external model paths).
    """

    profile: CMakeProfile
    targets: Mapping[str, CMakeTarget]
    options: Mapping[str, str]
    installed_files: tuple[InstalledFile, ...]
    problems: tuple[ParseProblem, ...]
    files_read: tuple[str, ...]
    skipped: tuple[ParseProblem, ...] = ()
    limits: tuple[ParseProblem, ...] = ()
    processes_not_run: tuple[ParseProblem, ...] = ()
    generated: tuple[str, ...] = ()


def repo_path(path: str) -> str | None:
    """The repository path of a model path under SOURCE_ROOT, or None when outside it."""
    normalized = posixpath.normpath(path)
    if normalized == SOURCE_ROOT:
        return ""
    if normalized.startswith(SOURCE_ROOT + "/"):
        return normalized[len(SOURCE_ROOT) + 1 :]
    return None
