"""SARIF 2.1.0 for code-scanning tools, with partialFingerprints and suppressions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from bot.model import Finding, Severity

if TYPE_CHECKING:
    from bot.check import Check
    from bot.pipeline import Report

_LEVEL = {Severity.BLOCKER: "error", Severity.MAJOR: "error", Severity.MINOR: "warning", Severity.INFO: "note"}


def render_sarif(report: "Report", checks: Iterable["Check"], version: str) -> dict:
    """One run, one rule per check, one result per finding (suppressed ones marked)."""
    rules = [
        {
            "id": check.id,
            "name": check.id,
            "shortDescription": {"text": check.title},
            "fullDescription": {"text": check.summary},
            "help": {"text": check.doc.strip(), "markdown": check.doc.strip()},
            "defaultConfiguration": {"level": _LEVEL[check.severity]},
            "properties": {"severity": check.severity.label},
        }
        for check in checks
    ]
    results = [_result(f, None) for f in report.findings] + [_result(f, f.suppressed) for f in report.suppressed]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "pr-check", "version": version, "rules": rules}},
                "versionControlProvenance": [{"revisionId": report.head}] if report.head else [],
                "results": results,
            }
        ],
    }


def _result(finding: Finding, suppressed_reason: str | None) -> dict:
    result = {
        "ruleId": finding.rule,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.line, finding.end_line)] if finding.path else [],
        "relatedLocations": [
            dict(_location(e.path, e.line, e.line), id=index, message={"text": e.note})
            for index, e in enumerate(finding.evidence)
        ],
        "partialFingerprints": {"prCheck/v1": finding.fingerprint},
        "properties": {"severity": finding.severity.label, "target": finding.target, "cell": finding.cell},
    }
    if suppressed_reason is not None:
        result["suppressions"] = [{"kind": "inSource", "justification": suppressed_reason}]
    if finding.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": finding.fix.description or "suggested fix"},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": finding.fix.path},
                        "replacements": [
                            {
                                "deletedRegion": {"startLine": finding.fix.line, "endLine": finding.fix.end_line},
                                "insertedContent": {"text": finding.fix.replacement + "\n"},
                            }
                        ],
                    }
                ],
            }
        ]
    return result


def _location(path: str, line: int, end_line: int) -> dict:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path},
            "region": {"startLine": max(1, line), "endLine": max(1, end_line, line)},
        }
    }
