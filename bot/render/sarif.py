"""SARIF 2.1.0 for code-scanning tools, with partialFingerprints and suppressions.

Valid against the OASIS schema and within GitHub code scanning's upload limits: every result has
a physical location (GitHub rejects one without) and a rule in `driver.rules`;
`versionControlProvenance` is written only with the repository URI the schema requires.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from bot.config import CONFIG_PATH
from bot.model import ENGINE_RULES, Finding, Severity
from bot.render.printable import is_printable_path
from bot.tree import path_bytes

if TYPE_CHECKING:
    from bot.check import Check
    from bot.pipeline import Report

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# GitHub code scanning's documented limits per upload.
MAX_RESULTS_PER_RUN = 25_000
MAX_RULES_PER_RUN = 25_000
MAX_LOCATIONS_PER_RESULT = 1_000
_LEVEL = {Severity.BLOCKER: "error", Severity.MAJOR: "error", Severity.MINOR: "warning", Severity.INFO: "note"}
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def render_sarif(
    report: Report,
    checks: Iterable[Check],
    version: str,
    *,
    engine_rules: Mapping[str, tuple[Severity, str]] | None = None,
    repository_uri: str | None = None,
    category: str | None = None,
) -> dict:
    """One run, one rule per check and engine rule, one result per finding (suppressed ones marked)."""
    engine_rules = ENGINE_RULES if engine_rules is None else engine_rules
    rules = [_rule(check.id, check.severity, check.title, check.summary, check.rationale) for check in checks]
    known = {rule["id"] for rule in rules}
    for rule_id, (severity, title) in sorted(engine_rules.items()):
        if rule_id not in known:
            rules.append(
                _rule(rule_id, severity, title, title, f"{title}. Reported by pr-check's engine, not by a check.")
            )
    known = {rule["id"] for rule in rules}
    for finding in (*report.findings, *report.suppressed):
        if finding.rule not in known:  # a rule unknown to this renderer still needs its descriptor
            rules.append(_rule(finding.rule, finding.severity, finding.title, finding.title, finding.title))
            known.add(finding.rule)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    everything = [(f, None) for f in report.findings] + [(f, f.suppressed) for f in report.suppressed]
    results = [_result(f, reason, index[f.rule], report) for f, reason in everything[:MAX_RESULTS_PER_RUN]]
    run: dict = {
        "tool": {
            "driver": {
                "name": "pr-check",
                "version": version,
                "semanticVersion": version,
                "rules": rules[:MAX_RULES_PER_RUN],
            }
        },
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if category:
        run["automationDetails"] = {"id": category.rstrip("/") + "/"}
    if repository_uri:
        provenance: dict = {"repositoryUri": repository_uri}
        if _COMMIT.match(report.head):
            provenance["revisionId"] = report.head
        run["versionControlProvenance"] = [provenance]
    properties: dict = {}
    if len(everything) > MAX_RESULTS_PER_RUN:
        properties["truncatedResults"] = len(everything) - MAX_RESULTS_PER_RUN
    if report.stats.config is not None:
        properties["config"] = report.stats.config.to_json()
    if properties:
        run["properties"] = properties
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _rule(rule_id: str, severity: Severity, title: str, summary: str, doc: str) -> dict:
    return {
        "id": rule_id,
        "name": rule_id,
        "shortDescription": {"text": title},
        "fullDescription": {"text": summary or title},
        "help": {"text": doc.strip() or title, "markdown": doc.strip() or title},
        "defaultConfiguration": {"level": _LEVEL[severity]},
        "properties": {"severity": severity.label},
    }


def _result(finding: Finding, suppressed_reason: str | None, rule_index: int, report: Report) -> dict:
    if finding.path:
        location = _location(finding.path, finding.line, finding.end_line)
    else:
        # A finding about the run (a check that crashed) has no file of its own; it is placed on the
        # config file, where the check can be disabled, because code scanning needs a location.
        location = _location(CONFIG_PATH, 1, 1)
        location["message"] = {"text": "no source location: this is about the review itself"}
    result = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message or finding.title},
        "locations": [location],
        "partialFingerprints": {"prCheck/v1": finding.fingerprint},
        "properties": {"severity": finding.severity.label, "target": finding.target, "cell": finding.cell},
    }
    related = [
        dict(_location(e.path, e.line, e.line), id=index, message={"text": e.note})
        for index, e in enumerate(finding.evidence[:MAX_LOCATIONS_PER_RESULT])
        if e.path
    ]
    if related:
        result["relatedLocations"] = related
    if suppressed_reason is not None:
        result["suppressions"] = [{"kind": "inSource", "justification": suppressed_reason}]
    if finding.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": finding.fix.description or "suggested fix"},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(finding.fix.path)},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": max(1, finding.fix.line),
                                    "endLine": max(1, finding.fix.line, finding.fix.end_line),
                                },
                                "insertedContent": {"text": finding.fix.replacement + "\n"},
                            }
                        ],
                    }
                ],
            }
        ]
    return result


def _uri(path: str) -> str:
    # A URI names bytes by percent-encoding them: a file name that is not UTF-8 goes that way.
    return path if is_printable_path(path) else quote(path_bytes(path), safe="/")


def _location(path: str, line: int, end_line: int) -> dict:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": {"startLine": max(1, line), "endLine": max(1, end_line, line)},
        }
    }
