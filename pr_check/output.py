"""The CLI's output side: validated output options, filtering a report, rendering, the exit status.

Everything here is checked before a review starts (`OutputRequest.from_options`), so a bad
`--output` directory or `--fail-level` is a usage error (exit 2), never a finished review lost.
"""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import UsageError
from bot.model import INTERNAL_ERROR, Severity
from bot.render.github_annotations import render_github_annotations
from bot.render.json import render_json
from bot.render.printable import printable
from bot.render.rdjson import render_rdjson
from bot.render.sarif import render_sarif
from bot.render.text import NORMAL, QUIET, VERBOSE, TextOptions, render_text
from pr_check.version import VERSION

if TYPE_CHECKING:
    from bot.check import Check
    from bot.pipeline import Report

FAIL_LEVELS = tuple(s.label for s in sorted(Severity, reverse=True))


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What a renderer may need beyond the report: the rules (SARIF lists them), the notes the text
    starts with, the repository's URL (SARIF's provenance), and the reader's text options."""

    rules: Sequence[Check]
    notes: tuple[str, ...] = ()
    repository_uri: str | None = None
    verbosity: int = NORMAL
    color: bool = False
    statistics: bool = False


@dataclass(frozen=True, slots=True)
class Format:
    """One output format: what `--format`'s help says of it, and how a report becomes its text."""

    description: str  # shown in `--format`'s help after the name; empty: the name says it
    render: Callable[[Report, RenderContext], str]


def _json_text(document: object) -> str:
    return json.dumps(printable(document), indent=2) + "\n"


# The output formats: `--format`'s choices, its help and the rendering all come from this table.
FORMATS: dict[str, Format] = {
    "text": Format(
        "",
        lambda report, context: printable(
            render_text(
                report,
                TextOptions(
                    verbosity=context.verbosity,
                    color=context.color,
                    statistics=context.statistics,
                    notes=context.notes,
                ),
            )
        ),
    ),
    "json": Format("the public report", lambda report, _context: _json_text(render_json(report))),
    "sarif": Format(
        "code scanning",
        lambda report, context: _json_text(
            render_sarif(report, context.rules, VERSION, repository_uri=context.repository_uri)
        ),
    ),
    "github": Format("workflow annotations", lambda report, _context: printable(render_github_annotations(report))),
    "rdjson": Format("reviewdog", lambda report, _context: _json_text(render_rdjson(report))),
}


def formats_help(default: str = "text") -> str:
    """`--format`'s help: every format with what it is for, and the default."""
    described = (f"{name} ({entry.description})" if entry.description else name for name, entry in FORMATS.items())
    return f"{', '.join(described)}; default: {default}"


@dataclass(frozen=True, slots=True)
class OutputOptions:
    """The output options as the user gave them, before validation; a subcommand that has no such
    option leaves its default. The commands build it from their parsed arguments
    (pr_check/commands/request.py), the Action directly."""

    format: str = "text"
    output: Path | None = None
    fail_level: str | None = None  # a severity label; None: the configuration's
    exit_zero: bool = False
    quiet: bool = False
    verbose: bool = False
    color: str = "auto"  # auto | always | never
    select: tuple[str, ...] = ()  # comma-separated rule ids, one item per --select
    ignore: tuple[str, ...] = ()
    path: tuple[str, ...] = ()  # scan --path
    statistics: bool = False


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
    def from_options(cls, options: OutputOptions, known_rules: Callable[[], frozenset[str]]) -> OutputRequest:
        """Validate every output option (`--select`/`--ignore` against `known_rules()`, asked only when
        they are given); UsageError (exit 2) on the first that is wrong."""
        output = options.output
        if output is not None:
            _check_writable(output)
        selected = _rule_list(options.select, "--select", known_rules)
        ignored = _rule_list(options.ignore, "--ignore", known_rules) or frozenset()
        if options.statistics and options.format != "text":
            raise UsageError("--statistics prints text; use it with --format text")
        verbosity = QUIET if options.quiet else VERBOSE if options.verbose else NORMAL
        color = options.color == "always" or (options.color == "auto" and output is None and _auto_color(os.environ))
        return cls(
            format=options.format,
            output=output,
            fail_level=Severity.parse(options.fail_level) if options.fail_level else None,
            exit_zero=options.exit_zero,
            verbosity=verbosity,
            color=color,
            selected=selected,
            ignored=ignored,
            paths=tuple(p.strip("/") for p in options.path),
            statistics=options.statistics,
        )

    def checks(self, available: Sequence[Check]) -> tuple[Check, ...]:
        """The checks to run: those selected and not ignored (skipping the others saves their time)."""
        return tuple(c for c in available if self.wants(c.id))

    def wants(self, rule: str) -> bool:
        if rule == INTERNAL_ERROR:
            return True  # a crashed check's verdict is missing whatever was selected
        return (self.selected is None or rule in self.selected) and rule not in self.ignored

    def filter(self, report: Report) -> Report:
        """Keep the findings of the wanted rules under the wanted paths."""

        def keep(finding) -> bool:
            return self.wants(finding.rule) and (not self.paths or any(_under(finding.path, p) for p in self.paths))

        return replace(
            report,
            findings=tuple(f for f in report.findings if keep(f)),
            suppressed=tuple(f for f in report.suppressed if keep(f)),
        )


def _auto_color(environ: os._Environ[str] | dict[str, str]) -> bool:
    """`--color auto` on stdout: NO_COLOR wins, then FORCE_COLOR / CLICOLOR_FORCE (CI logs that
    render colour), then whether stdout is a terminal."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR", "") not in ("", "0", "false") or environ.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    return sys.stdout.isatty()


def _under(path: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(path, pattern)
    return path == pattern or path.startswith(pattern + "/") or pattern in ("", ".")


def _rule_list(values: Sequence[str], option: str, known_rules: Callable[[], frozenset[str]]) -> frozenset[str] | None:
    if not values:
        return None
    rules = frozenset(part.strip() for value in values for part in value.split(",") if part.strip())
    if not rules:  # `--select ""`: not "every rule", and running none would pass as clean
        raise UsageError(f"{option}: no rule id given (comma-separated ids; `pr-check rules` lists them)")
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


def render(
    report: Report,
    request: OutputRequest,
    rules: Sequence[Check],
    *,
    notes: tuple[str, ...] = (),
    repository_uri: str | None = None,
) -> str:
    """The report in the requested format, as the text to write (file names that are not UTF-8
    escaped, bot/render/printable.py)."""
    context = RenderContext(
        rules,
        notes=notes,
        repository_uri=repository_uri,
        verbosity=request.verbosity,
        color=request.color,
        statistics=request.statistics,
    )
    return FORMATS[request.format].render(report, context)


def write(text: str, output: Path | None) -> None:
    """To stdout, or atomically to the output file (a reader never sees half a report). A path that
    exists and is no regular file (`/dev/null`, `/dev/stdout`, a named pipe) is written into as it
    is: replacing it would put a regular file where the device or pipe was (as root, /dev/null)."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        special = not stat.S_ISREG(output.stat().st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with output.open("w", encoding="utf-8") as stream:
            stream.write(text)
        return
    handle, temporary = tempfile.mkstemp(dir=output.parent if str(output.parent) else ".", prefix=f".{output.name}.")
    try:
        # mkstemp makes the file 0600; give it the mode an ordinary write would (the umask's, or the
        # replaced file's own), so that a report meant to be shared is readable as any other file.
        os.fchmod(handle, _mode_for(output))
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, output)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _mode_for(output: Path) -> int:
    try:
        return output.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def exit_status(report: Report, request: OutputRequest) -> int:
    """1 when a finding is at or above the fail level (unless --exit-zero), else 0."""
    if request.exit_zero:
        return 0
    level = request.fail_level if request.fail_level is not None else report.fail_level
    return 1 if any(f.severity >= level for f in report.findings) else 0
