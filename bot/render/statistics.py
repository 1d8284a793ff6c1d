"""Counts people look at rather than read: findings per rule, per cell, per directory."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.model import Finding

NO_CELL = "(no cell)"
NO_PATH = "(no path)"
DIRECTORY_DEPTH = 2  # `backends/cuda`, `extension/pybindings`: deep enough to name an owner


@dataclass(frozen=True, slots=True)
class Statistics:
    """Finding counts, each list sorted by count (descending), then name."""

    total: int
    by_rule: tuple[tuple[str, str, int], ...]  # (rule, severity, count)
    by_cell: tuple[tuple[str, int], ...]
    by_directory: tuple[tuple[str, int], ...]


def count_findings(findings: Iterable[Finding], depth: int = DIRECTORY_DEPTH) -> Statistics:
    """Count findings per rule (with its severity), per Buck cell and per directory."""
    findings = list(findings)
    rules = Counter((f.rule, f.severity.label) for f in findings)
    cells = Counter(f.cell or NO_CELL for f in findings)
    directories = Counter(directory_of(f.path, depth) for f in findings)
    return Statistics(
        total=len(findings),
        by_rule=tuple((rule, severity, n) for (rule, severity), n in _ordered(rules)),
        by_cell=tuple(_ordered(cells)),
        by_directory=tuple(_ordered(directories)),
    )


def directory_of(path: str, depth: int = DIRECTORY_DEPTH) -> str:
    """The first `depth` directories of `path` (`.` for a top-level file)."""
    if not path:
        return NO_PATH
    parts = posixpath.dirname(path).split("/")
    return "/".join(parts[:depth]) or "."


def render_statistics_lines(stats: Statistics) -> list[str]:
    """Plain-text tables, count first so the columns line up in a terminal or a log."""
    width = len(str(max([stats.total, 1])))
    lines = ["Findings by rule:"]
    lines += [f"  {n:>{width}}  {severity:<7}  {rule}" for rule, severity, n in stats.by_rule] or ["  (none)"]
    lines += ["", "Findings by cell:"]
    lines += [f"  {n:>{width}}  {cell}" for cell, n in stats.by_cell] or ["  (none)"]
    lines += ["", "Findings by directory:"]
    lines += [f"  {n:>{width}}  {directory}" for directory, n in stats.by_directory] or ["  (none)"]
    return lines


def rule_by_cell_table(findings: Sequence[Finding]) -> list[str]:
    """A compact Markdown table: one row per rule, one column per cell that has findings."""
    if not findings:
        return []
    counts = Counter((f.rule, f.cell or NO_CELL) for f in findings)
    cells = sorted({cell for _, cell in counts}, key=lambda c: (c == NO_CELL, c))
    rules = [rule for rule, _ in _ordered(Counter(f.rule for f in findings))]
    lines = ["| rule | " + " | ".join(cells) + " | total |", "|---|" + "---:|" * (len(cells) + 1)]
    for rule in rules:
        row = [str(counts.get((rule, cell), 0) or "") for cell in cells]
        total = sum(counts.get((rule, cell), 0) for cell in cells)
        lines.append(f"| `{rule}` | " + " | ".join(row) + f" | {total} |")
    return lines


def _ordered(counter: Counter) -> list[tuple]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))
