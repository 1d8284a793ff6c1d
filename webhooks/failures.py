"""A review that did not finish, as a finding: what happened, while doing what, and which file is to blame.

The finding is the `internal-error` rule's, so that every consumer of findings (the check run, the
review, the JSON report) shows it like any other; the check run of such a review is failed whatever
the fail level, because a review that could not look must never read as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from bot.model import Finding, Severity, fingerprint
from webhooks.isolation import FailureKind, Phase, ReviewFailed, Step

INTERNAL_ERROR = "internal-error"
_BUILD_FILE_NAMES = frozenset({"BUCK", "BUCK.v2", "TARGETS", "TARGETS.v2"})
_TITLES = {
    FailureKind.CRASH: "The review process crashed on this change",
    FailureKind.TIMEOUT: "The review ran out of time on this change",
    FailureKind.MEMORY: "The review ran out of memory on this change",
    FailureKind.ERROR: "The review failed on this change",
}


def concerned_path(phase: Phase, changed: Sequence[str]) -> str | None:
    """The one changed file the failure can be blamed on, or None when it cannot be told apart.

    While Buck packages were being evaluated, only a changed build file (or a .bzl it loads) can
    have made the difference, since the base revision evaluated; otherwise any changed file can.
    """
    if phase.step is Step.BUCK_PACKAGES:
        candidates = [
            path for path in changed if PurePosixPath(path).name in _BUILD_FILE_NAMES or path.endswith(".bzl")
        ]
    else:
        candidates = list(changed)
    return candidates[0] if len(candidates) == 1 else None


def failure_finding(failed: ReviewFailed, changed: Sequence[str]) -> Finding:
    """The finding that stands for a review that did not finish."""
    path = concerned_path(failed.phase, changed) or ""
    blame = (
        f"It was reading `{path}`, the one changed file that can have caused it."
        if path
        else f"The pull request changes {len(changed)} file{'s' if len(changed) != 1 else ''}; "
        "the failure could not be pinned on one of them."
    )
    message = (
        f"pr-check could not finish reviewing this commit: {failed.detail}, while {failed.phase}. {blame} "
        "Nothing from this pull request was executed. The check stays failed until a push is reviewed "
        "in full; if the change is legitimate, a maintainer can find the details in the App's log."
    )
    return Finding(
        rule=INTERNAL_ERROR,
        severity=Severity.MAJOR,
        title=_TITLES[failed.kind],
        path=path,
        line=1 if path else 0,
        end_line=1 if path else 0,
        message=message,
        fingerprint=fingerprint(INTERNAL_ERROR, path, failed.kind, ""),
    )
