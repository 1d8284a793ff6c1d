"""Findings -> the `pr-check` check run: conclusion, summary, text and annotations in batches. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.model import Finding, Severity
from bot.render.finding_groups import FindingGroup, group_findings
from bot.render.fix_patch import collapsed_fix
from bot.render.printable import is_printable_path
from bot.render.review_body import count_phrase, evidence_lines, group_lines, plural, shim_note, unevaluated_lines
from bot.render.statistics import rule_by_cell_table
from bot.review_stats import Unevaluated

CHECK_RUN_NAME = "pr-check"

# GitHub's documented limits (api-facts 3.5).
OUTPUT_TEXT_LIMIT = 65_535
ANNOTATIONS_PER_REQUEST = 50
ANNOTATION_MESSAGE_LIMIT = 64_000
ANNOTATION_TITLE_LIMIT = 255
EVIDENCE_IN_CHECK_RUN = 20  # evidence lines per entry; the JSON report has every one

_ANNOTATION_LEVEL = {
    Severity.BLOCKER: "failure",
    Severity.MAJOR: "failure",
    Severity.MINOR: "warning",
    Severity.INFO: "notice",
}


@dataclass(frozen=True, slots=True)
class CheckRunOutput:
    """The completed `pr-check` check run: conclusion, output, annotations in request-sized batches."""

    conclusion: str  # failure | neutral | success
    title: str
    summary: str
    text: str
    annotation_batches: tuple[tuple[dict, ...], ...]

    def output(self, batch: int) -> dict:
        """The `output` object of the PATCH that sends annotation batch `batch`."""
        payload: dict[str, Any] = {"title": self.title, "summary": self.summary, "text": self.text}
        if batch < len(self.annotation_batches):
            payload["annotations"] = list(self.annotation_batches[batch])
        return payload

    @property
    def requests_needed(self) -> int:
        return max(1, len(self.annotation_batches))


def check_conclusion(findings: Iterable[Finding], fail_level: Severity = Severity.MAJOR) -> str:
    """failure at or above the fail level (`[review] fail_level` of the base config, major by
    default), neutral for lesser findings of minor or more, success otherwise (design 6)."""
    worst = max((finding.severity for finding in findings), default=None)
    if worst is None:
        return "success"
    if worst >= fail_level:
        return "failure"
    return "neutral" if worst >= Severity.MINOR else "success"


def annotation(finding: Finding) -> dict:
    """One check-run annotation for a finding."""
    item = {
        "path": finding.path,
        "start_line": max(1, finding.line),
        "end_line": max(finding.line, finding.end_line, 1),
        "annotation_level": _ANNOTATION_LEVEL[finding.severity],
        "title": f"{finding.rule}: {finding.title}"[:ANNOTATION_TITLE_LIMIT],
        "message": finding.message[:ANNOTATION_MESSAGE_LIMIT],
    }
    if finding.evidence:
        details = "\n".join(f"{e.path}:{e.line}: {e.note}" for e in finding.evidence)
        item["raw_details"] = details[:ANNOTATION_MESSAGE_LIMIT]
    return item


def render_check_run(
    *,
    findings: Sequence[Finding],
    off_diff: Sequence[Finding],
    suppressed_count: int,
    base_sha: str,
    head_sha: str,
    smoke_reasons: Sequence[str],
    full_report_pointer: str,
    fail_level: Severity = Severity.MAJOR,
    unevaluated: Sequence[Unevaluated] = (),
    shim_stand_ins: str | None = None,
) -> CheckRunOutput:
    """The `pr-check` check run's completed state: the full record of the review."""
    conclusion = check_conclusion(findings, fail_level)
    title = f"{count_phrase(findings)}" if findings else "No issues"
    header = [
        f"Reviewed `{base_sha[:12]}..{head_sha[:12]}`: {title}.",
    ]
    if suppressed_count:
        header.append(f"{suppressed_count} finding{'s' if suppressed_count != 1 else ''} suppressed in the source.")
    if unevaluated:
        header += ["", *unevaluated_lines(unevaluated)]
    if shim_stand_ins:
        header += ["", shim_note(shim_stand_ins)]
    if smoke_reasons:
        header += ["", "**CUDA-touching**: the GPU smoke job applies (`pr-check / cuda-smoke`):"]
        header += [f"- {reason}" for reason in smoke_reasons]
    rows = []
    groups = group_findings(findings)
    if findings:
        off = {f.fingerprint for f in off_diff}
        rows += ["", "**Findings by rule and cell**", "", *rule_by_cell_table(findings)]
        if len(groups) < len(findings):
            rows += [
                "",
                f"Near-duplicates (one cause, several lines or targets) are one row each: {plural(len(groups), 'row')}.",
            ]
        rows += ["", "| severity | rule | where | title |", "|---|---|---|---|"]
        for group in groups:
            lead = group.lead
            where = f"`{lead.path}:{lead.line}`" + (" (outside the diff)" if lead.fingerprint in off else "")
            more = len(group.members) - 1
            title = lead.title + (f" (+{more} like it)" if more else "")
            rows.append(f"| {group.severity.label} | `{lead.rule}` | {where} | {_cell(title)} |")
    summary = _trim("\n".join(header + rows), full_report_pointer)
    details = []
    for group in groups:
        lead = group.lead
        details += [f"### `{lead.rule}` at `{lead.path}:{lead.line}`", "", lead.message.strip()]
        grouped = group_lines(group)
        if grouped:
            details += ["", *grouped]
        details += evidence_lines(group.evidence, EVIDENCE_IN_CHECK_RUN)
        if lead.fix is not None:
            details += ["", *collapsed_fix(lead.fix)]
        details.append("")
    text = _trim("\n".join(details), full_report_pointer)
    # One annotation per group (GitHub shows each in the diff, so near-duplicates would repeat there);
    # a finding about the pull request as a whole (no path) is in the summary; GitHub wants a path,
    # one it can name (UTF-8).
    annotations = [
        _group_annotation(group) for group in groups if group.lead.path and is_printable_path(group.lead.path)
    ]
    batches = tuple(
        tuple(annotations[i : i + ANNOTATIONS_PER_REQUEST]) for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)
    )
    return CheckRunOutput(conclusion, title, summary, text, batches)


def _group_annotation(group: FindingGroup) -> dict:
    """The annotation of a group's lead, its message saying what else the group stands for and its
    details listing every piece of evidence."""
    item = annotation(group.lead)
    grouped = group_lines(group)
    if grouped:
        item["message"] = (group.lead.message + "\n\n" + "\n".join(grouped))[:ANNOTATION_MESSAGE_LIMIT]
    if group.evidence:
        details = "\n".join(f"{e.path}:{e.line}: {e.note}" for e in group.evidence)
        item["raw_details"] = details[:ANNOTATION_MESSAGE_LIMIT]
    return item


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _trim(text: str, pointer: str) -> str:
    """Fit GitHub's 65,535-character output field, ending with where the whole report is."""
    if len(text) <= OUTPUT_TEXT_LIMIT:
        return text
    tail = f"\n\n... trimmed to fit GitHub's limit. {pointer}"
    return text[: OUTPUT_TEXT_LIMIT - len(tail)] + tail


def render_failed_check_run(failure: Finding, *, base_sha: str, head_sha: str, phase: str) -> CheckRunOutput:
    """The check run of a review that did not finish: failed whatever the fail level, with the reason."""
    where = f" (`{failure.path}`)" if failure.path else ""
    summary = "\n".join(
        [
            f"Reviewing `{base_sha[:12]}..{head_sha[:12]}` did not finish{where}.",
            "",
            failure.message,
            "",
            f"Last step reached: {phase}.",
        ]
    )
    annotations = ((annotation(failure),),) if failure.path else ()
    return CheckRunOutput(
        "failure", failure.title[:ANNOTATION_TITLE_LIMIT], summary[:OUTPUT_TEXT_LIMIT], "", annotations
    )


_EXTERNAL_ID = re.compile(r"^pr=(\d{1,10});head=([0-9a-f]{7,64})$")


def check_run_external_id(number: int, head_sha: str) -> str:
    """The `pr-check` check run's external id: the pull request and head it reviews."""
    return f"pr={int(number)};head={head_sha}"


def pull_number_from_external_id(external_id: object) -> int | None:
    """The pull request number a `pr-check` check run's external id names, or None."""
    match = _EXTERNAL_ID.match(external_id) if isinstance(external_id, str) else None
    return int(match.group(1)) if match else None


def in_progress_output(head_sha: str) -> dict:
    """The output shown while the review runs."""
    return {"title": "Reviewing", "summary": f"pr-check is reviewing `{head_sha[:12]}`."}
