"""The public JSON, version 1 (schema: bot/render/report.schema.json): other tools and our service consume it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.pipeline import Report

JSON_VERSION = 1


def render_json(report: Report) -> dict:
    """The report as the versioned JSON document (findings new at head, smoke decision)."""
    return {
        "version": JSON_VERSION,
        "base": report.base,
        "head": report.head,
        "findings": [finding.to_json() for finding in report.findings],
        "suppressed": [dict(finding.to_json(), reason=finding.suppressed) for finding in report.suppressed],
        "smoke": report.smoke.to_json(),
        "stats": report.stats.to_json(),
    }
