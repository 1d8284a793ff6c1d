"""The CLI's output side: validated output options, filtering a report, rendering, the exit status.

Everything here is checked before a review starts (`OutputRequest.from_arguments`), so a bad
`--output` directory or `--fail-level` is a usage error (exit 2), never a finished review lost.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from functools import cache
from typing import TYPE_CHECKING, Sequence

from bot.errors import UsageError
from bot.model import Severity

if TYPE_CHECKING:
    from bot.check import Check
    from bot.pipeline import Report

# The checks, the engine and the renderers are imported when a command needs them, not here:
# `pr-check --version` and `--help` build the parser from this module and must start at once.
FORMATS = ("text", "json", "sarif", "github", "rdjson")
FAIL_LEVELS = tuple(s.label for s in sorted(Severity, reverse=True))


@cache
def known_rules() -> frozenset[str]:
    """Every rule id a config or `--select` may name: the checks' and the engine's own."""
    import checks
    from bot.engine import ENGINE_RULES

    return frozenset(checks.BY_ID) | frozenset(ENGINE_RULES)


def __getattr__(name: str) -> object:
    if name == "KNOWN_RULES":  # the module constant it used to be, computed on first use
        return known_rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class OutputRequest:
    """What the user asked to see, and how the exit status is decided."""

    format: str
    output: Path | None
    fail_level: Severity | None  # None: the configuration's
    exit_zero: bool
    verbosity: int
    color: bool
    selected: frozenset[str] | None  # None: every rule
    ignored: frozenset[str]
    paths: tuple[str, ...]  # scan --path: keep findings under these (prefixes or globs)
    statistics: bool

    @classmethod
    def from_arguments(cls, arguments: argparse.Namespace) -> "OutputRequest":
        """Validate every output option; UsageError (exit 2) on the first that is wrong."""
        output = getattr(arguments, "output", None)
        if output is not None:
            _check_writable(output)
        selected = _rule_list(getattr(arguments, "select", None), "--select")
        ignored = _rule_list(getattr(arguments, "ignore", None), "--ignore") or frozenset()
        statistics = bool(getattr(arguments, "statistics", False))
        if statistics and arguments.format != "text":
            raise UsageError("--statistics prints text; use it with --format text")
        from bot.render.text import NORMAL, QUIET, VERBOSE

        verbosity = QUIET if getattr(arguments, "quiet", False) else VERBOSE if getattr(arguments, "verbose", False) else NORMAL
        color_choice = getattr(arguments, "color", "auto")
        color = color_choice == "always" or (
            color_choice == "auto" and output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        fail_level = getattr(arguments, "fail_level", None)
        return cls(
            format=arguments.format,
            output=output,
            fail_level=Severity.parse(fail_level) if fail_level else None,
            exit_zero=bool(getattr(arguments, "exit_zero", False)),
            verbosity=verbosity,
            color=color,
            selected=selected,
            ignored=ignored,
            paths=tuple(p.strip("/") for p in getattr(arguments, "path", None) or ()),
            statistics=statistics,
        )

    def checks(self, available: Sequence["Check"]) -> tuple["Check", ...]:
        """The checks to run: those selected and not ignored (skipping the others saves their time)."""
        return tuple(c for c in available if self.wants(c.id))

    def wants(self, rule: str) -> bool:
        from bot.engine import INTERNAL_ERROR

        if rule == INTERNAL_ERROR:
            return True  # a crashed check's verdict is missing whatever was selected
        return (self.selected is None or rule in self.selected) and rule not in self.ignored

    def filter(self, report: "Report") -> "Report":
        """Keep the findings of the wanted rules under the wanted paths."""
        def keep(finding) -> bool:
            return self.wants(finding.rule) and (not self.paths or any(_under(finding.path, p) for p in self.paths))

        return replace(
            report,
            findings=tuple(f for f in report.findings if keep(f)),
            suppressed=tuple(f for f in report.suppressed if keep(f)),
        )


def _under(path: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(path, pattern)
    return path == pattern or path.startswith(pattern + "/") or pattern in ("", ".")


def _rule_list(values: list[str] | None, option: str) -> frozenset[str] | None:
    if not values:
        return None
    rules = frozenset(part.strip() for value in values for part in value.split(",") if part.strip())
    unknown = sorted(rules - known_rules())
    if unknown:
        raise UsageError(f"{option}: unknown rule id(s) {', '.join(unknown)} (see `pr-check rules`)")
    return rules


def _check_writable(output: Path) -> None:
    if output.is_dir():
        raise UsageError(f"--output {output}: is a directory; give a file name")
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--output {output}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--output {output}: directory {parent} is not writable")


def render(report: "Report", request: OutputRequest, *, notes: tuple[str, ...] = (), repository_uri: str | None = None) -> str:
    """The report in the requested format, as the text to write."""
    import json

    if request.format == "json":
        from bot.render.json import render_json

        return json.dumps(render_json(report), indent=2) + "\n"
    if request.format == "sarif":
        import checks
        from bot.render.sarif import render_sarif
        from pr_check.cli import VERSION

        return json.dumps(render_sarif(report, checks.ALL, VERSION, repository_uri=repository_uri), indent=2) + "\n"
    if request.format == "rdjson":
        from bot.render.rdjson import render_rdjson

        return json.dumps(render_rdjson(report), indent=2) + "\n"
    if request.format == "github":
        from bot.render.github_annotations import render_github_annotations

        return render_github_annotations(report)
    from bot.render.text import TextOptions, render_text

    options = TextOptions(verbosity=request.verbosity, color=request.color, statistics=request.statistics, notes=notes)
    return render_text(report, options)


def write(text: str, output: Path | None) -> None:
    """To stdout, or atomically to the output file (a reader never sees half a report)."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import tempfile

    handle, temporary = tempfile.mkstemp(dir=output.parent if str(output.parent) else ".", prefix=f".{output.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, output)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def exit_status(report: "Report", request: OutputRequest) -> int:
    """1 when a finding is at or above the fail level (unless --exit-zero), else 0."""
    if request.exit_zero:
        return 0
    level = request.fail_level if request.fail_level is not None else report.fail_level
    return 1 if any(f.severity >= level for f in report.findings) else 0
