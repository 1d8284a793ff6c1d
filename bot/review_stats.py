"""What a review measured and could not see, as values: read by field, never by key.

`Report.stats` was a dict that every renderer read with `.get("unevaluated", ())`; a misspelt key
read as "nothing" and silently dropped the one part of a report that says what the review missed.
The JSON report keeps the same shape (`ReviewStats.to_json`), so its consumers see no change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class CellStats:
    """One cell the review used: its packages and targets, and how many failed or were evaluated afresh."""

    packages: int
    targets: int
    failed: int
    evaluated: int  # not served from the evaluation cache

    def to_json(self) -> dict:
        return {"packages": self.packages, "targets": self.targets, "failed": self.failed, "evaluated": self.evaluated}


@dataclass(frozen=True, slots=True)
class Unevaluated:
    """A package the change touches that failed to evaluate: its findings are unknown."""

    cell: str
    package: str  # //path
    kind: str  # the evaluation error's kind
    reason: str  # the evaluator's message
    failed_at_base: bool | None = None  # the package failed the same way at base; None: not known

    def to_json(self) -> dict:
        return {
            "cell": self.cell,
            "package": self.package,
            "kind": self.kind,
            "reason": self.reason,
            "failed_at_base": self.failed_at_base,
        }


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where the configuration came from when it was not the base revision's (`--config FILE`)."""

    source: str  # "local"
    path: str

    def to_json(self) -> dict:
        return {"source": self.source, "path": self.path}


@dataclass(frozen=True, slots=True)
class ReviewStats:
    """The review's measurements; every field has an empty default, so a renderer never guesses."""

    seconds: float | None = None
    cells: Mapping[str, CellStats] = field(default_factory=dict)
    checks: tuple[str, ...] = ()  # the rule ids that ran
    unevaluated: tuple[Unevaluated, ...] = ()
    not_blamed: Mapping[str, int] = field(default_factory=dict)  # reason -> findings not blamed on the change
    config: ConfigSource | None = None
    # The `shim/` submodule's path when the head pins one whose files were not at hand: the open
    # source cell was evaluated with the built-in stand-ins for its macros (bot/buck/stand_ins.py).
    shim_stand_ins: str | None = None

    def to_json(self) -> dict:
        document: dict = {}
        if self.seconds is not None:
            document["seconds"] = self.seconds
        document |= {
            "cells": {name: cell.to_json() for name, cell in self.cells.items()},
            "checks": list(self.checks),
            "unevaluated": [item.to_json() for item in self.unevaluated],
            "not_blamed": dict(self.not_blamed),
        }
        if self.config is not None:
            document["config"] = self.config.to_json()
        if self.shim_stand_ins is not None:
            document["shim_stand_ins"] = self.shim_stand_ins
        return document
