"""The host under test's configuration: command-line flags over the `[smoke]` table of the repository's
`.github/pr-check.toml`.

    [smoke]
    host_build = "cmake --preset cuda && cmake --build --preset cuda"   # run with the shell, in the repo
    host = "cmake-out/executor_runner"                                   # relative to the repository
    host_load_args = ["--smoke-load", "{library}"]                       # optional; {library} = canary .so
    host_archive = "cmake-out/backends/cuda/libaoti_cuda_shims.a"        # optional; the shims the host links
    host_link_args = ["-lcudart", "-lstdc++"]                            # optional; what the archive needs

`host` and `host_archive` may each be given alone: the stage checks whichever is configured.
The whole file is validated against the one schema (bot/config_schema.py) that the review reads it
with too, so the two never disagree about a key.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from bot.config_schema import CONFIG_PATH as _CONFIG_NAME
from bot.config_schema import validate
from bot.errors import ConfigError

CONFIG_PATH = Path(_CONFIG_NAME)


class SmokeConfigError(Exception):
    """The smoke configuration is unreadable or wrong; a usage error (exit code 2)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class HostConfig:
    """How to build the host under test and, optionally, how to make it load a library."""

    repo: Path
    build_command: str | None
    host: Path | None
    load_args: tuple[str, ...] | None
    archive: Path | None = None
    link_args: tuple[str, ...] = ()


def read_host_config(
    repo: Path,
    build_command: str | None = None,
    host: str | None = None,
    load_args: str | None = None,
    archive: str | None = None,
    link_args: str | None = None,
) -> HostConfig:
    """Merge the flags (which win) with the repository's `[smoke]` table."""
    table = _read_smoke_table(repo / CONFIG_PATH)
    chosen_host = host or table.get("host")
    chosen_args = shlex.split(load_args) if load_args is not None else table.get("host_load_args")
    chosen_archive = archive or table.get("host_archive")
    chosen_link_args = shlex.split(link_args) if link_args is not None else table.get("host_link_args", [])
    return HostConfig(
        repo=repo,
        build_command=build_command or table.get("host_build"),
        host=(repo / chosen_host) if chosen_host else None,
        load_args=tuple(chosen_args) if chosen_args is not None else None,
        archive=(repo / chosen_archive) if chosen_archive else None,
        link_args=tuple(chosen_link_args),
    )


def _read_smoke_table(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10 on some GPU machines
        raise SmokeConfigError(f"{path}: reading it needs Python 3.11 (tomllib); pass --host instead") from None
    try:
        document = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SmokeConfigError(f"{path}: {error}") from None
    try:
        validate(document, str(path))
    except ConfigError as error:
        raise SmokeConfigError(str(error)) from None
    return document.get("smoke", {})
