"""Plain-text output for a terminal, a pipe or a CI log: findings most severe first.

Plain strings, no rich: rich wraps at the terminal width (80 columns in a pipe), pads lines with
spaces and reads `:100:` as an emoji code, each of which corrupts output that tools grep or
diff. Colour is a few ANSI codes on the severity label, only when the caller asks for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.model import Finding, Severity
from bot.render.finding_groups import FindingGroup, capped, group_findings
from bot.render.fix_patch import unified_patch
from bot.render.review_body import EVIDENCE_SHOWN, PLACES_SHOWN
from bot.render.statistics import count_findings, render_statistics_lines

if TYPE_CHECKING:
    from bot.pipeline import Report
    from bot.review_stats import Unevaluated

QUIET, NORMAL, VERBOSE = -1, 0, 1
SMOKE_REASONS_SHOWN = 10
_ANSI = {Severity.BLOCKER: "1;31", Severity.MAJOR: "31", Severity.MINOR: "33", Severity.INFO: "36"}
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True, slots=True)
class TextOptions:
    """How much to print and how."""

    verbosity: int = NORMAL  # QUIET: one line per finding; VERBOSE: everything, nothing truncated
    color: bool = False
    statistics: bool = False  # counts per rule, cell and directory instead of the findings
    notes: tuple[str, ...] = ()  # lines under the header: where the base and the config came from


def render_text(report: Report, options: TextOptions = TextOptions()) -> str:
    """The report as text; every line ends without trailing whitespace, and the text ends with a newline."""
    if options.verbosity <= QUIET:
        lines = [_one_line(finding, options) for finding in report.findings]
    else:
        lines = _full(report, options)
    return "".join(line.rstrip() + "\n" for line in lines)


def revision_label(revision: str) -> str:
    """A commit id shortened to 12 digits; anything else (a patched tree's name) as it is."""
    return revision[:12] if _COMMIT.match(revision) else revision


def _full(report: Report, options: TextOptions) -> list[str]:
    scan = report.base == ""
    if scan:
        lines = [
            f"pr-check scan {revision_label(report.head)}: the whole tree, {_plural(len(report.findings), 'finding')}"
        ]
    else:
        lines = [
            f"pr-check review {revision_label(report.base)}..{revision_label(report.head)}: "
            f"{_plural(len(report.changes.files), 'file')} changed"
        ]
    lines += list(options.notes)
    if options.statistics:
        lines += ["", *render_statistics_lines(count_findings(report.findings))]
    else:
        if not report.findings:
            lines.append("No findings." if scan else "No findings new at head.")
        for group in group_findings(report.findings):
            lines += ["", *_finding(group, options)]
    lines.append("")
    if report.suppressed:
        lines.append(f"{_plural(len(report.suppressed), 'finding')} suppressed with @lint-ignore.")
        if options.verbosity >= VERBOSE:
            lines += [f"  {f.path}:{f.line}: {f.rule}: {f.suppressed}" for f in report.suppressed]
    lines.append(f"Summary: {_summary(report.findings)}")
    lines += unevaluated_lines(report.stats.unevaluated)
    if report.stats.shim_stand_ins:
        path = report.stats.shim_stand_ins
        lines.append(
            f"Stand-ins: {path}/ is not initialised; the oss cell used pr-check's built-in stand-ins for its macros "
            f"(git submodule update --init {path}, or --shim PATH)"
        )
    if not scan:
        lines += _smoke(report, options)
    if options.verbosity >= VERBOSE:
        lines.append(f"Checks run: {', '.join(report.stats.checks) or 'none'}")
        if report.stats.seconds is not None:
            lines.append(f"Time: {report.stats.seconds} s")
    return lines


def unevaluated_lines(unevaluated: Sequence[Unevaluated]) -> list[str]:
    """What the model could not see in the packages the change touches: never silence."""
    if not unevaluated:
        return []
    count = len(unevaluated)
    lines = [
        f"Not evaluated ({count} package{'' if count == 1 else 's'} this change touches; no rule checked their "
        "targets in that cell, so findings there are unknown):"
    ]
    for item in unevaluated:
        if item.failed_at_base is None:
            history = "at base: not known"
        else:
            history = "failed at base too" if item.failed_at_base else "evaluated at base: this change breaks it"
        lines.append(f"  {item.cell}: {item.package}: {history}; {item.kind}: {item.reason}")
    return lines


def _finding(group: FindingGroup, options: TextOptions) -> list[str]:
    """One group of near-duplicates: the lead's message, what else it stands for, evidence (capped
    unless verbose: `--format json` and `-v` have all of it), the fix."""
    finding = group.lead
    label = f"{group.severity.label.upper():<8}"
    if options.color:
        label = f"\033[{_ANSI[group.severity]}m{label}\033[0m"
    lines = [f"{label} {finding.rule}  {_place(finding)}"]
    if len(group.targets) > 1:
        lines.append(f"  targets: {', '.join(group.targets)}" + (f" (cell {finding.cell})" if finding.cell else ""))
    elif finding.target:
        lines.append(f"  target: {finding.target}" + (f" (cell {finding.cell})" if finding.cell else ""))
    lines += [f"  {line}" for line in finding.message.strip().splitlines()]
    others = [f"{path}:{line}" for path, line in group.places[1:]]
    if others:
        lines.append(f"  also at: {', '.join(capped(others, PLACES_SHOWN))}")
    if len(group.rules) > 1:
        lines.append(f"  also reported by: {', '.join(group.rules[1:])}")
    evidence = [f"{e.path}:{e.line}: {e.note}" for e in group.evidence]
    if options.verbosity < VERBOSE:
        evidence = capped(evidence, EVIDENCE_SHOWN)
        if len(group.evidence) > EVIDENCE_SHOWN:
            evidence[-1] += " (-v or --format json shows all)"
    lines += [f"  evidence: {item}" for item in evidence]
    if finding.fix is not None:
        lines.append(f"  fix: {finding.fix.path}:{finding.fix.line}: {finding.fix.description or 'replace with'}")
        # The patch when the replaced lines are known (only what changes, with context); else the new text.
        shown = (
            unified_patch(finding.fix).splitlines()[2:]
            if finding.fix.original
            else finding.fix.replacement.splitlines()
        )
        lines += [f"    {line}" for line in shown]
    return lines


def _one_line(finding: Finding, options: TextOptions) -> str:
    severity = finding.severity.label
    if options.color:
        severity = f"\033[{_ANSI[finding.severity]}m{severity}\033[0m"
    first = finding.message.strip().splitlines()[0] if finding.message.strip() else finding.title
    return f"{_place(finding)}: {severity} {finding.rule}: {first}"


def _place(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}" if finding.path else "(no file)"


def _summary(findings) -> str:
    counts = {s: sum(1 for f in findings if f.severity == s) for s in Severity}
    return ", ".join(f"{n} {s.label}" for s, n in sorted(counts.items(), reverse=True) if n) or "clean"


def _smoke(report: Report, options: TextOptions) -> list[str]:
    if not report.smoke.required:
        return ["GPU smoke job: not required"] if options.verbosity >= VERBOSE else []
    reasons = report.smoke.reasons
    shown = reasons if options.verbosity >= VERBOSE else reasons[:SMOKE_REASONS_SHOWN]
    lines = ["GPU smoke job: required"] + [f"  - {reason}" for reason in shown]
    if len(shown) < len(reasons):
        lines.append(f"  ... and {len(reasons) - len(shown)} more (-v shows all)")
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
