"""`.github/pr-check.toml` for the review. Keys, shapes and defaults: bot/config_schema.py.

The file is read at the *base* revision, so a pull request cannot switch off its own checks. An
invalid file is one ConfigError that names where it was read (which revision, or which file) and
lists every problem found in it, so that one edit can fix them all.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bot.buck.cells import CELL_TABLE
from bot.buck.targets import Platform
from bot.config_schema import CONFIG_PATH, default, problems, raise_problems
from bot.errors import ConfigError
from bot.model import Severity

if TYPE_CHECKING:
    from bot.cmake.profiles import CMakeProfile


def _table_platforms() -> Mapping[str, tuple[Platform, ...]]:
    return MappingProxyType({cell.name: cell.platforms for cell in CELL_TABLE})


@dataclass(frozen=True, slots=True)
class BuckSettings:
    """Which cells build for CPU-only platforms, the platforms each cell builds for, and what
    guards a CUDA target there."""

    cpu_only_cells: tuple[str, ...] = default("buck", "cpu_only_cells")
    # cell -> its target platforms; `[buck.platforms]` replaces a cell's row of the cell table.
    platforms: Mapping[str, tuple[Platform, ...]] = field(default_factory=_table_platforms)
    cuda_constraint: str = default("buck", "cuda_constraint")
    cuda_external_deps: tuple[str, ...] = default("buck", "cuda_external_deps")

    def platforms_of(self, cell: str) -> tuple[Platform, ...]:
        """The platforms `cell` builds for."""
        return self.platforms.get(cell, ())


@dataclass(frozen=True, slots=True)
class SmokeSettings:
    """What counts as CUDA-touching, so that the review says whether the GPU smoke job runs.

    The `[smoke]` keys about the host under test are the smoke job's (smoke/config.py reads them).
    """

    cuda_paths: tuple[str, ...] = default("smoke", "cuda_paths")


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a repository can configure; the defaults are ExecuTorch's."""

    disabled: frozenset[str] = frozenset()
    severities: Mapping[str, Severity] = field(default_factory=dict)
    fail_level: Severity = Severity.parse(default("review", "fail_level"))
    inline_level: Severity = Severity.parse(default("review", "inline_level"))
    # The CMake profiles checks evaluate, first the default; names are built-in profiles
    # (bot/cmake/profiles.py) or ones `[cmake.profile.NAME]` defines (kept in cmake_defined).
    cmake_profiles: tuple[str, ...] = default("cmake", "profiles")
    cmake_defined: Mapping[str, CMakeProfile] = field(default_factory=lambda: MappingProxyType({}))
    buck: BuckSettings = BuckSettings()
    smoke: SmokeSettings = SmokeSettings()


def config_origin(revision: str) -> str:
    """How errors name the file read at `revision` (a commit id, or a tree's own name)."""
    shown = revision[:12] if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision) else revision
    return f"{CONFIG_PATH} at {shown}" if shown else CONFIG_PATH


def parse_config(text: str | None, known_rules: frozenset[str] = frozenset(), *, origin: str = CONFIG_PATH) -> Config:
    """Parse and validate the config text; None (no file) gives the defaults. `origin` names the
    file in errors: `config_origin(revision)`, or the path of a local file."""
    if text is None:
        return Config()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin}: {error}") from None
    raise_problems(origin, problems(data))  # the shapes hold below this line
    found: list[str] = []
    rules = data.get("rules", {})
    disabled = frozenset(rules.get("disable", ()))
    severities = {}
    for rule, level in rules.get("severity", {}).items():
        try:
            severities[rule] = Severity.parse(str(level))
        except ValueError as error:
            found.append(f"rules.severity.{rule}: {error}")
    if known_rules:
        unknown = (disabled | set(severities)) - known_rules
        if unknown:
            found.append(f"unknown rule id(s): {', '.join(sorted(unknown))}")
    fail_level = Severity.parse(default("review", "fail_level"))
    try:
        fail_level = Severity.parse(data.get("review", {}).get("fail_level", default("review", "fail_level")))
    except ValueError as error:
        found.append(f"review.fail_level: {error}")
    inline_level = Severity.parse(default("review", "inline_level"))
    try:
        inline_level = Severity.parse(data.get("review", {}).get("inline_level", default("review", "inline_level")))
    except ValueError as error:
        found.append(f"review.inline_level: {error}")
    buck = data.get("buck", {})
    smoke = data.get("smoke", {})
    defaults = Config()
    cmake_profiles, cmake_defined = defaults.cmake_profiles, defaults.cmake_defined
    platforms = defaults.buck.platforms
    try:
        cmake_profiles, cmake_defined = _cmake_profiles(data.get("cmake", {}), defaults)
    except ConfigError as error:
        found.append(str(error).removeprefix(f"{CONFIG_PATH}: "))
    try:
        platforms = _platforms(buck.get("platforms", {}), defaults.buck.platforms)
    except ConfigError as error:
        found.append(str(error).removeprefix(f"{CONFIG_PATH}: "))
    raise_problems(origin, found)
    return Config(
        disabled=disabled,
        severities=severities,
        fail_level=fail_level,
        inline_level=inline_level,
        cmake_profiles=cmake_profiles,
        cmake_defined=cmake_defined,
        buck=BuckSettings(
            cpu_only_cells=tuple(buck.get("cpu_only_cells", defaults.buck.cpu_only_cells)),
            cuda_constraint=buck.get("cuda_constraint", defaults.buck.cuda_constraint),
            cuda_external_deps=tuple(buck.get("cuda_external_deps", defaults.buck.cuda_external_deps)),
            platforms=platforms,
        ),
        smoke=SmokeSettings(cuda_paths=tuple(smoke.get("cuda_paths", defaults.smoke.cuda_paths))),
    )


def _cmake_profiles(cmake: Mapping[str, Any], defaults: Config) -> tuple[tuple[str, ...], Mapping[str, Any]]:
    """The active profile names and the repository's own profiles; unknown names are errors."""
    if not cmake:
        return defaults.cmake_profiles, defaults.cmake_defined
    active = tuple(cmake.get("profiles", defaults.cmake_profiles))
    if not all(isinstance(name, str) for name in active):
        raise ConfigError(f"{CONFIG_PATH}: cmake.profiles must be a list of profile names")
    from bot.cmake.profiles import define_profiles  # imported on use: most configs define none

    return active, define_profiles(cmake.get("profile", {}), active)


def _platforms(
    table: Mapping[str, Any], defaults: Mapping[str, tuple[Platform, ...]]
) -> Mapping[str, tuple[Platform, ...]]:
    """`[buck.platforms]`: `cell = [{name = "...", constraints = ["ovr_config//os:linux", ...]}, ...]`
    replaces that cell's platforms; other cells keep the cell table's."""
    merged = dict(defaults)
    for cell, rows in table.items():
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise ConfigError(f"{CONFIG_PATH}: buck.platforms.{cell} must be a list of tables")
        platforms = []
        for row in rows:
            name, constraints = row.get("name"), row.get("constraints", [])
            if set(row) - {"name", "constraints"} or not isinstance(name, str) or not isinstance(constraints, list):
                raise ConfigError(
                    f'{CONFIG_PATH}: buck.platforms.{cell}: each platform is {{name = "...", constraints = [...]}}'
                )
            platforms.append(Platform(name, tuple(sorted(str(c) for c in constraints))))
        merged[cell] = tuple(platforms)
    return MappingProxyType(merged)
