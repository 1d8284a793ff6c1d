"""The `pr-check / cuda-smoke` check run: its states from dispatch to the workflow run's end, and the
findings a run bears on, linked to their inline comments. Pure: values in, payload fields out.

The inline comments' smoke line is the review's (bot/render/github_review.py); this module is the
smoke job's own report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SmokeLinked:
    """A finding whose inline comment speaks of a smoke run, for the smoke check's summary."""

    rule: str
    path: str
    line: int | None  # None when GitHub shows the comment as outdated
    html_url: str


def duration_text(seconds: float) -> str:
    """How long the App waited, in words: minutes, or seconds below two minutes."""
    if seconds < 120:
        return f"{seconds:g} second{'' if seconds == 1 else 's'}"
    return f"{seconds / 60:g} minutes"


@dataclass(frozen=True, slots=True)
class SmokeCheckUpdate:
    """A state of the `pr-check / cuda-smoke` check run."""

    status: str  # queued | in_progress | completed
    conclusion: str | None
    title: str
    summary: str
    details_url: str | None = None


_RUN_CONCLUSIONS = {
    "success": "success",
    "failure": "failure",
    "cancelled": "cancelled",
    "timed_out": "timed_out",
    "action_required": "action_required",
    "skipped": "skipped",
}


def smoke_waiting_for_maintainer(reasons: Sequence[str]) -> SmokeCheckUpdate:
    """The smoke check of an untrusted author: PR code does not run until a maintainer asks."""
    return SmokeCheckUpdate(
        status="completed",
        conclusion="neutral",
        title="Waiting for a maintainer",
        summary=_smoke_reasons_text(reasons)
        + "\n\nThis change touches CUDA, but its author does not have write access, so the GPU smoke job "
        "does not start by itself. A maintainer can comment `/pr-check smoke` to run it.",
    )


def smoke_dispatched(reasons: Sequence[str], correlation_id: str, requested_by: str | None) -> SmokeCheckUpdate:
    """The smoke check right after the workflow was dispatched."""
    who = f" at @{requested_by}'s request" if requested_by else ""
    return SmokeCheckUpdate(
        status="queued",
        conclusion=None,
        title="GPU smoke job queued",
        summary=_smoke_reasons_text(reasons)
        + f"\n\nThe GPU smoke workflow was dispatched{who} (correlation id `{correlation_id}`).",
    )


def smoke_from_workflow_run(
    status: str, conclusion: str | None, html_url: str | None, correlation_id: str, linked: Sequence[SmokeLinked] = ()
) -> SmokeCheckUpdate:
    """The smoke check following a `workflow_run` event; a completed one lists the findings it bears on."""
    link = f"[the workflow run]({html_url})" if html_url else "the workflow run"
    if status != "completed":
        state = "in_progress" if status == "in_progress" else "queued"
        return SmokeCheckUpdate(
            state,
            None,
            "GPU smoke job running" if state == "in_progress" else "GPU smoke job queued",
            f"See {link} (correlation id `{correlation_id}`).",
            html_url,
        )
    mapped = _RUN_CONCLUSIONS.get(conclusion or "", "neutral")
    title = {"success": "GPU smoke job passed", "failure": "GPU smoke job failed"}.get(
        mapped, f"GPU smoke job: {conclusion or 'no conclusion'}"
    )
    return SmokeCheckUpdate(
        "completed",
        mapped,
        title,
        f"See {link} for the report (correlation id `{correlation_id}`)." + _linked_text(linked),
        html_url,
    )


def smoke_never_reported(timeout_s: float, correlation_id: str, linked: Sequence[SmokeLinked] = ()) -> SmokeCheckUpdate:
    """The smoke check when the dispatched run never reported back in time."""
    return SmokeCheckUpdate(
        status="completed",
        conclusion="neutral",
        title="GPU smoke job did not report",
        summary=(
            f"The GPU smoke workflow was dispatched but did not report a result within {duration_text(timeout_s)} "
            f"(correlation id `{correlation_id}`). The runner may be offline or busy. This check is left "
            "neutral rather than pending; a maintainer can comment `/pr-check smoke` to try again."
        )
        + _linked_text(linked),
    )


def smoke_dispatch_failed(message: str, correlation_id: str, linked: Sequence[SmokeLinked] = ()) -> SmokeCheckUpdate:
    """The smoke check when GitHub refused the dispatch."""
    return SmokeCheckUpdate(
        status="completed",
        conclusion="neutral",
        title="GPU smoke job could not start",
        summary=f"Dispatching the GPU smoke workflow failed: {message} (correlation id `{correlation_id}`)."
        + _linked_text(linked),
    )


_LINKED_LISTED = 50  # keeps the summary far below GitHub's 65,535 characters


def _linked_text(linked: Sequence[SmokeLinked]) -> str:
    """The findings a smoke run bears on, each linked to its inline comment."""
    if not linked:
        return ""
    lines = ["", "", "Findings this job proves or disproves:"]
    for item in linked[:_LINKED_LISTED]:
        where = f"`{item.path}:{item.line}`" if item.line is not None else f"`{item.path}` (outdated)"
        label = f"`{item.rule}` at {where}"
        lines.append(f"- [{label}]({item.html_url})" if item.html_url else f"- {label}")
    if len(linked) > _LINKED_LISTED:
        lines.append(f"- ... and {len(linked) - _LINKED_LISTED} more")
    return "\n".join(lines)


def _smoke_reasons_text(reasons: Sequence[str]) -> str:
    if not reasons:
        return "The GPU smoke job was requested."
    return "Why this change needs the GPU smoke job:\n" + "\n".join(f"- {reason}" for reason in reasons)
