"""What a reviewing command's parsed arguments ask for: the output request and a local config.

Both are validated before any work starts, so a bad option is a usage error (exit 2), never a
finished review lost.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from bot.config import CONFIG_PATH, Config, parse_config
from bot.errors import ConfigError, UsageError
from pr_check.output import OutputOptions, OutputRequest
from pr_check.product_checks import known_rules


def output_options(arguments: argparse.Namespace) -> OutputOptions:
    """The output options among a subcommand's parsed arguments; the options it does not define
    keep OutputOptions' defaults (the one place that knows parsers differ)."""
    given = vars(arguments)
    values = {}
    for option in fields(OutputOptions):
        value = given.get(option.name)
        if value is not None:
            values[option.name] = tuple(value) if isinstance(value, list) else value
    return OutputOptions(**values)


def output_request(arguments: argparse.Namespace) -> OutputRequest:
    """The validated output request of a subcommand's parsed arguments."""
    return OutputRequest.from_options(output_options(arguments), known_rules)


def local_config(path: Path | None) -> Config | None:
    """`--config FILE`, parsed and validated now; None means the reviewed revision's own config."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror}") from None
    try:
        return parse_config(text, known_rules())
    except ConfigError as error:
        raise ConfigError(str(error).replace(CONFIG_PATH, str(path), 1)) from None
