"""The one schema of `.github/pr-check.toml`: every key of every table, with its shape, default and reader.

Both readers validate the whole file against it (the review's `bot/config.py` and the smoke job's
`smoke/config.py`), so a key one of them accepts is never an error in the other, and an unknown key
is an error in both. The README's configuration reference is generated from `KEYS`
(`make generated`; tests/test_config_schema.py checks it is current).

To add a key, add a row. A table of named tables (`[cmake.profile.NAME]`) is a row of shape TABLE
whose `entries` names the table its entries follow; their keys are rows of that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from bot.buck.cells import cells_where
from bot.errors import ConfigError

CONFIG_PATH = ".github/pr-check.toml"
# Who reads a key: the review (CLI, Action, App) or the GPU smoke job on its runner.
REVIEW = "review"
SMOKE_JOB = "smoke job"
PROFILE_TABLE = "cmake.profile.NAME"  # each `[cmake.profile.<name>]`


class Shape(Enum):
    """What a value must be; checked before any reader looks at it."""

    STRING = "string"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    STRINGS = "list of strings"
    TABLE = "table"

    def accepts(self, value: Any) -> bool:
        if self is Shape.STRING:
            return isinstance(value, str)
        if self is Shape.INTEGER:
            return isinstance(value, int) and not isinstance(value, bool)
        if self is Shape.BOOLEAN:
            return isinstance(value, bool)
        if self is Shape.STRINGS:
            return isinstance(value, list) and all(isinstance(item, str) for item in value)
        return isinstance(value, dict)


@dataclass(frozen=True, slots=True)
class Key:
    """One key: `table.name`, what it holds, its default (None: none), who reads it and what it does."""

    table: str
    name: str
    shape: Shape
    default: Any
    reader: str
    doc: str
    entries: str | None = None  # TABLE of named tables: the table each entry follows


_CUDA_EXTERNAL_DEPS = (
    "cuda",
    "cuda-lazy",
    "cudart",
    "cudart_static",
    "curand",
    "cublas",
    "cublasLt",
    "cusparse",
    "cufft",
    "nvrtc",
    "cudnn",
    "nccl",
    "thrust",
    "cub",
)

KEYS: tuple[Key, ...] = (
    Key("rules", "disable", Shape.STRINGS, (), REVIEW, "rule ids not run (`pr-check rules` lists them)"),
    Key(
        "rules",
        "severity",
        Shape.TABLE,
        {},
        REVIEW,
        "rule id -> `blocker`, `major`, `minor` or `info`, replacing the rule's default severity",
    ),
    Key(
        "review",
        "fail_level",
        Shape.STRING,
        "major",
        REVIEW,
        "findings at or above it fail the check run and exit 1 (`blocker`, `major`, `minor`, `info`)",
    ),
    Key(
        "review",
        "inline_level",
        Shape.STRING,
        "major",
        REVIEW,
        "findings at or above it get an inline comment on the pull request; the rest are listed in one "
        "collapsed section of the review body and in the check run",
    ),
    Key(
        "buck",
        "cpu_only_cells",
        Shape.STRINGS,
        cells_where(cpu_only=True),
        REVIEW,
        "cells that build for CPU-only platforms, where a CUDA target needs the guard",
    ),
    Key(
        "buck",
        "cuda_constraint",
        Shape.STRING,
        "ovr_config//cuda:has_cuda",
        REVIEW,
        "the constraint in `compatible_with` that guards a CUDA target",
    ),
    Key(
        "buck",
        "cuda_external_deps",
        Shape.STRINGS,
        _CUDA_EXTERNAL_DEPS,
        REVIEW,
        "`external_deps` names that make a target CUDA",
    ),
    Key(
        "buck",
        "platforms",
        Shape.TABLE,
        {},
        REVIEW,
        "cell -> list of `{name, constraints}` tables: the target platforms that cell builds for, replacing "
        "its row of the cell table (`select()` and `compatible_with` are resolved per platform)",
    ),
    Key(
        "cmake",
        "profiles",
        Shape.STRINGS,
        ("linux-gcc-cuda", "msvc", "cpu-only"),
        REVIEW,
        "the CMake profiles every CMake check evaluates, the default first: built-in ones or `[cmake.profile.NAME]`",
    ),
    Key(
        "cmake",
        "profile",
        Shape.TABLE,
        {},
        REVIEW,
        "the repository's own CMake profiles, one table each",
        entries=PROFILE_TABLE,
    ),
    Key(
        PROFILE_TABLE,
        "extends",
        Shape.STRING,
        None,
        REVIEW,
        "the profile this one starts from (built in or defined here)",
    ),
    Key(
        PROFILE_TABLE,
        "compiler_id",
        Shape.STRING,
        None,
        REVIEW,
        "`CMAKE_CXX_COMPILER_ID` (`GNU`, `Clang`, `MSVC`); required without `extends`",
    ),
    Key(
        PROFILE_TABLE,
        "platform",
        Shape.STRING,
        None,
        REVIEW,
        "`CMAKE_SYSTEM_NAME` (`Linux`, `Windows`, `Darwin`); required without `extends`",
    ),
    Key(
        PROFILE_TABLE,
        "cuda",
        Shape.BOOLEAN,
        None,
        REVIEW,
        "whether a CUDA compiler is found; required without `extends`",
    ),
    Key(
        PROFILE_TABLE,
        "variables",
        Shape.TABLE,
        None,
        REVIEW,
        "cache variables, as `-D` gives them on the cmake command line",
    ),
    Key(
        PROFILE_TABLE,
        "prelude",
        Shape.STRINGS,
        None,
        REVIEW,
        "CMake files (repository paths) evaluated before the top CMakeLists.txt, such as a preset; missing ones are skipped",
    ),
    Key(
        "smoke",
        "cuda_paths",
        Shape.STRINGS,
        ("backends/cuda/", "backends/aoti/", "extension/cuda/", "shim_et/"),
        REVIEW,
        "path prefixes whose change makes a pull request CUDA-touching (the smoke job runs)",
    ),
    Key(
        "smoke",
        "host_build",
        Shape.STRING,
        None,
        SMOKE_JOB,
        "shell command, run in the repository, that builds the host under test",
    ),
    Key("smoke", "host", Shape.STRING, None, SMOKE_JOB, "the host under test, relative to the repository"),
    Key(
        "smoke",
        "host_load_args",
        Shape.STRINGS,
        None,
        SMOKE_JOB,
        "arguments that make the host load a library; `{library}` is the canary's .so",
    ),
    Key(
        "smoke",
        "host_archive",
        Shape.STRING,
        None,
        SMOKE_JOB,
        "the shim archive the host links, relative to the repository",
    ),
    Key("smoke", "host_link_args", Shape.STRINGS, None, SMOKE_JOB, "what linking that archive needs (`-lcudart`, ...)"),
)

_BY_PLACE: Mapping[tuple[str, str], Key] = {(key.table, key.name): key for key in KEYS}
# The top-level tables, in the order of KEYS.
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(key.table for key in KEYS if "." not in key.table))


def default(table: str, name: str) -> Any:
    """The default of `table.name` as the schema states it."""
    return _BY_PLACE[(table, name)].default


def validate(data: Mapping[str, Any], path: str = CONFIG_PATH) -> None:
    """Raise ConfigError for unknown tables or keys, or values of the wrong shape, anywhere in the
    file: every one of them, in one message."""
    raise_problems(path, problems(data))


def problems(data: Mapping[str, Any]) -> list[str]:
    """Every unknown table or key and every value of the wrong shape in the file, in file order."""
    found = []
    for section, values in data.items():
        if section not in SECTIONS:
            found.append(f"unknown section [{section}] (known: {', '.join(SECTIONS)})")
        elif not isinstance(values, dict):
            found.append(f"[{section}] must be a table")
        else:
            found += table_problems(section, section, values)
    return found


def raise_problems(path: str, found: list[str]) -> None:
    """One ConfigError naming `path` and listing every problem (one line), or nothing."""
    if len(found) == 1:
        raise ConfigError(f"{path}: {found[0]}")
    if found:
        raise ConfigError(f"{path}: {len(found)} problems: " + "; ".join(found))


def validate_table(table: str, shown: str, values: Mapping[str, Any], path: str = CONFIG_PATH) -> None:
    """Check one table's keys against the schema's `table` (shown in errors as `shown`)."""
    raise_problems(path, table_problems(table, shown, values))


def table_problems(table: str, shown: str, values: Mapping[str, Any]) -> list[str]:
    """What is wrong with one table's keys against the schema's `table` (shown as `shown`)."""
    found = []
    for name, value in values.items():
        key = _BY_PLACE.get((table, name))
        if key is None:
            known = ", ".join(k.name for k in KEYS if k.table == table)
            found.append(f"unknown key {shown}.{name} (known: {known})")
        elif not key.shape.accepts(value):
            found.append(f"{shown}.{name} must be a {key.shape.value}")
        elif key.entries is not None:
            for entry, entry_values in value.items():
                if not isinstance(entry_values, dict):
                    found.append(f"{shown}.{name}.{entry} must be a table")
                else:
                    found += table_problems(key.entries, f"{shown}.{name}.{entry}", entry_values)
    return found


def reference_markdown() -> str:
    """The README's configuration reference: one row per key, grouped by table."""
    lines = ["| key | type | default | read by | what it does |", "|---|---|---|---|---|"]
    for key in KEYS:
        table = key.table.replace(".NAME", ".<name>")
        lines.append(
            f"| `[{table}]` `{key.name}` | {key.shape.value} | {_shown_default(key)} | {key.reader} | {key.doc} |"
        )
    return "\n".join(lines) + "\n"


def _shown_default(key: Key) -> str:
    if key.default is None:
        return "none"
    if isinstance(key.default, tuple):
        return "`[" + ", ".join(f'"{item}"' for item in key.default) + "]`"
    if isinstance(key.default, dict):
        return "`{}`"
    return f'`"{key.default}"`'
