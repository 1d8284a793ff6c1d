"""Reviewdog Diagnostic Format (rdjson): `pr-check ... --format rdjson | reviewdog -f=rdjson`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.model import Finding, Severity

if TYPE_CHECKING:
    from bot.pipeline import Report

SOURCE = {"name": "pr-check"}
_SEVERITY = {Severity.BLOCKER: "ERROR", Severity.MAJOR: "ERROR", Severity.MINOR: "WARNING", Severity.INFO: "INFO"}


def render_rdjson(report: Report) -> dict:
    """One DiagnosticResult holding a Diagnostic per finding."""
    worst = max((f.severity for f in report.findings), default=Severity.INFO)
    return {
        "source": dict(SOURCE),
        "severity": _SEVERITY[worst],
        "diagnostics": [diagnostic(finding) for finding in report.findings],
    }


def diagnostic(finding: Finding) -> dict:
    """A finding as an rdjson Diagnostic: location, code, related locations and a suggestion."""
    item: dict = {
        "message": finding.message.strip() or finding.title,
        "location": {"path": finding.path or "."},
        "severity": _SEVERITY[finding.severity],
        "source": dict(SOURCE),
        "code": {"value": finding.rule},
    }
    if finding.path:
        item["location"]["range"] = _range(finding.line, finding.end_line)
    if finding.evidence:
        item["related_locations"] = [
            {"message": e.note, "location": {"path": e.path, "range": _range(e.line, e.line)}} for e in finding.evidence
        ]
    if finding.fix is not None and finding.fix.path == finding.path:
        # reviewdog replaces the range [start, end) with the text: whole lines here.
        item["suggestions"] = [
            {
                "range": {
                    "start": {"line": max(1, finding.fix.line), "column": 1},
                    "end": {"line": max(1, finding.fix.line, finding.fix.end_line) + 1, "column": 1},
                },
                "text": finding.fix.replacement + "\n",
            }
        ]
    return item


def _range(line: int, end_line: int) -> dict:
    return {"start": {"line": max(1, line)}, "end": {"line": max(1, line, end_line)}}
