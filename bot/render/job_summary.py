"""The GitHub Action's job summary: the App's check-run record of the review, as one Markdown page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.render.github_review import place_finding, placement_is_valid, render_check_run

if TYPE_CHECKING:
    from bot.pipeline import Report


def render_job_summary(report: Report, full_report_pointer: str = "") -> str:
    """Title, counts, what was not evaluated, the smoke decision, the rule-by-cell table, the findings and their details."""
    off_diff = []
    for finding in report.findings:
        placement = place_finding(finding, report.changes)
        if placement is None or not placement_is_valid(placement, report.changes):
            off_diff.append(finding)
    output = render_check_run(
        findings=report.findings,
        off_diff=off_diff,
        suppressed_count=len(report.suppressed),
        base_sha=report.base,
        head_sha=report.head,
        smoke_reasons=report.smoke.reasons,
        full_report_pointer=full_report_pointer,
        fail_level=report.fail_level,
        unevaluated=report.stats.unevaluated,
        shim_stand_ins=report.stats.shim_stand_ins,
    )
    parts = [f"## pr-check: {output.title}", output.summary]
    if output.text.strip():
        parts.append(output.text.strip())
    return "\n\n".join(parts) + "\n"
