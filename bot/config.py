"""`.github/pr-check.toml`: the one configuration reader. Unknown keys are errors.

The file is read at the *base* revision, so a pull request cannot switch off its own checks.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from bot.buck.cells import CELL_TABLE, cells_where
from bot.buck.targets import Platform
from bot.errors import ConfigError
from bot.model import Severity

if TYPE_CHECKING:
    from bot.cmake.profiles import CMakeProfile

CONFIG_PATH = ".github/pr-check.toml"


def _table_platforms() -> Mapping[str, tuple[Platform, ...]]:
    return MappingProxyType({cell.name: cell.platforms for cell in CELL_TABLE})


@dataclass(frozen=True, slots=True)
class BuckSettings:
    """Which cells build for CPU-only platforms, the platforms each cell builds for, and what
    guards a CUDA target there."""

    cpu_only_cells: tuple[str, ...] = cells_where(cpu_only=True)
    # cell -> its target platforms; `[buck.platforms]` replaces a cell's row of the cell table.
    platforms: Mapping[str, tuple[Platform, ...]] = field(default_factory=_table_platforms)
    cuda_constraint: str = "ovr_config//cuda:has_cuda"
    cuda_external_deps: tuple[str, ...] = (
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

    def platforms_of(self, cell: str) -> tuple[Platform, ...]:
        """The platforms `cell` builds for."""
        return self.platforms.get(cell, ())


@dataclass(frozen=True, slots=True)
class SmokeSettings:
    """Where the GPU smoke job is and what counts as CUDA-touching."""

    cuda_paths: tuple[str, ...] = ("backends/cuda/", "backends/aoti/", "extension/cuda/", "shim_et/")
    workflow: str = "gpu-smoke.yml"
    timeout_minutes: int = 60
    host_build: str = ""
    host: str = ""
    host_load_args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a repository can configure; the defaults are ExecuTorch's."""

    disabled: frozenset[str] = frozenset()
    severities: Mapping[str, Severity] = field(default_factory=dict)
    fail_level: Severity = Severity.MAJOR
    # The CMake profiles checks evaluate, first the default; names are built-in profiles
    # (bot/cmake/profiles.py) or ones `[cmake.profile.NAME]` defines (kept in cmake_defined).
    cmake_profiles: tuple[str, ...] = ("linux-gcc-cuda", "msvc", "cpu-only")
    cmake_defined: Mapping[str, "CMakeProfile"] = field(default_factory=lambda: MappingProxyType({}))
    buck: BuckSettings = BuckSettings()
    smoke: SmokeSettings = SmokeSettings()


_SCHEMA: Mapping[str, Mapping[str, type | tuple[type, ...]]] = {
    "rules": {"disable": list, "severity": dict},
    "review": {"fail_level": str},
    "cmake": {"profiles": list, "profile": dict},
    "buck": {"cpu_only_cells": list, "cuda_constraint": str, "cuda_external_deps": list, "platforms": dict},
    "smoke": {
        "cuda_paths": list,
        "workflow": str,
        "timeout_minutes": int,
        "host_build": str,
        "host": str,
        "host_load_args": list,
    },
}


def parse_config(text: str | None, known_rules: frozenset[str] = frozenset()) -> Config:
    """Parse and validate the config text; None (no file) gives the defaults."""
    if text is None:
        return Config()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{CONFIG_PATH}: {error}") from None
    for section, values in data.items():
        if section not in _SCHEMA:
            raise ConfigError(f"{CONFIG_PATH}: unknown section [{section}] (known: {', '.join(_SCHEMA)})")
        if not isinstance(values, dict):
            raise ConfigError(f"{CONFIG_PATH}: [{section}] must be a table")
        for key, value in values.items():
            expected = _SCHEMA[section].get(key)
            if expected is None:
                raise ConfigError(f"{CONFIG_PATH}: unknown key {section}.{key}")
            if not isinstance(value, expected):
                raise ConfigError(f"{CONFIG_PATH}: {section}.{key} must be a {_type_name(expected)}")
    rules = data.get("rules", {})
    disabled = frozenset(rules.get("disable", ()))
    severities = {}
    for rule, level in rules.get("severity", {}).items():
        try:
            severities[rule] = Severity.parse(str(level))
        except ValueError as error:
            raise ConfigError(f"{CONFIG_PATH}: rules.severity.{rule}: {error}") from None
    if known_rules:
        unknown = (disabled | set(severities)) - known_rules
        if unknown:
            raise ConfigError(f"{CONFIG_PATH}: unknown rule id(s): {', '.join(sorted(unknown))}")
    try:
        fail_level = Severity.parse(data.get("review", {}).get("fail_level", "major"))
    except ValueError as error:
        raise ConfigError(f"{CONFIG_PATH}: review.fail_level: {error}") from None
    buck = data.get("buck", {})
    smoke = data.get("smoke", {})
    defaults = Config()
    cmake_profiles, cmake_defined = _cmake_profiles(data.get("cmake", {}), defaults)
    return Config(
        disabled=disabled,
        severities=severities,
        fail_level=fail_level,
        cmake_profiles=cmake_profiles,
        cmake_defined=cmake_defined,
        buck=BuckSettings(
            cpu_only_cells=tuple(buck.get("cpu_only_cells", defaults.buck.cpu_only_cells)),
            cuda_constraint=buck.get("cuda_constraint", defaults.buck.cuda_constraint),
            cuda_external_deps=tuple(buck.get("cuda_external_deps", defaults.buck.cuda_external_deps)),
            platforms=_platforms(buck.get("platforms", {}), defaults.buck.platforms),
        ),
        smoke=SmokeSettings(
            cuda_paths=tuple(smoke.get("cuda_paths", defaults.smoke.cuda_paths)),
            workflow=smoke.get("workflow", defaults.smoke.workflow),
            timeout_minutes=smoke.get("timeout_minutes", defaults.smoke.timeout_minutes),
            host_build=smoke.get("host_build", ""),
            host=smoke.get("host", ""),
            host_load_args=tuple(smoke.get("host_load_args", ())),
        ),
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
                    f"{CONFIG_PATH}: buck.platforms.{cell}: each platform is {{name = \"...\", constraints = [...]}}"
                )
            platforms.append(Platform(name, tuple(sorted(str(c) for c in constraints))))
        merged[cell] = tuple(platforms)
    return MappingProxyType(merged)


def _type_name(expected: Any) -> str:
    names = {list: "list", dict: "table", str: "string", int: "integer"}
    if isinstance(expected, tuple):
        return " or ".join(names.get(t, t.__name__) for t in expected)
    return names.get(expected, expected.__name__)
