"""Findings -> GitHub payloads: the `pr-check` check run, the review, and what to do with the bot's
earlier comments on a new push.

Pure: everything here is a function of values. The App (webhooks/) reads GitHub, calls these, and
sends what they return. GitHub rejects a whole review when one inline comment is off the diff, so
every comment is placed against the diff's hunks here, before anything is posted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.diff import ChangeSet
from bot.model import Finding, Severity
from bot.render.check_run import (  # noqa: F401 - the check run's half, re-exported for the App
    ANNOTATION_MESSAGE_LIMIT,
    ANNOTATION_TITLE_LIMIT,
    ANNOTATIONS_PER_REQUEST,
    CHECK_RUN_NAME,
    OUTPUT_TEXT_LIMIT,
    CheckRunOutput,
    annotation,
    check_conclusion,
    check_run_external_id,
    count_phrase,
    in_progress_output,
    pull_number_from_external_id,
    render_check_run,
    render_failed_check_run,
)
from bot.render.finding_groups import FindingGroup, group_findings
from bot.render.fix_patch import collapsed_fix
from bot.render.printable import is_printable_path
from bot.render.review_body import evidence_lines, group_lines, render_review_body
from bot.render.smoke_check_run import SmokeLinked, duration_text

SMOKE_CHECK_RUN_NAME = "pr-check / cuda-smoke"

# The default of `[review] inline_level`: groups below it are summarised in the review body.
INLINE_LEVEL = Severity.MAJOR

# GitHub's documented limit on a comment body (api-facts 3.3).
COMMENT_BODY_LIMIT = 65_536

_FINGERPRINT_MARKER = re.compile(r"<!-- pr-check:fp=([0-9A-Za-z_.:-]+) -->")
_REVIEW_MARKER = re.compile(r"<!-- pr-check:review head=([0-9a-f]{7,64}) -->")
# The smoke line is one line of its own, ending with its marker, so it can be replaced alone
# (a body GitHub stored with CRLF line ends keeps them).
_SMOKE_LINE = re.compile(r"^.*<!-- pr-check:smoke rule=([a-z0-9-]+) head=([0-9a-f]{7,64}) -->(?=\r?$)", re.MULTILINE)
FIXED_REPLY_PREFIX = "Fixed in "


# -- markers ---------------------------------------------------------------------------------
def fingerprint_marker(fingerprint: str) -> str:
    """The hidden marker that ties an inline comment to its finding across pushes."""
    return f"<!-- pr-check:fp={fingerprint} -->"


def marked_fingerprint(body: str) -> str | None:
    """The fingerprint a comment body carries, or None when it is not one of ours."""
    match = _FINGERPRINT_MARKER.search(body or "")
    return match.group(1) if match else None


def review_marker(head_sha: str) -> str:
    """The hidden marker of the review posted for one head commit."""
    return f"<!-- pr-check:review head={head_sha} -->"


def marked_review_head(body: str) -> str | None:
    """The head commit a review body was posted for, or None when it is not one of ours."""
    match = _REVIEW_MARKER.search(body or "")
    return match.group(1) if match else None


def smoke_marker(rule: str, head_sha: str) -> str:
    """The hidden marker that ends a comment's smoke line: which rule, and which head it speaks of."""
    return f"<!-- pr-check:smoke rule={rule} head={head_sha} -->"


@dataclass(frozen=True, slots=True)
class SmokeMark:
    """The smoke line a comment body carries."""

    rule: str
    head_sha: str
    line: str  # the whole line, marker included


def marked_smoke(body: str) -> SmokeMark | None:
    """The smoke line of a comment body, or None when it has none."""
    match = _SMOKE_LINE.search(body or "")
    return SmokeMark(match.group(1), match.group(2), match.group(0)) if match else None


def with_smoke_line(body: str, line: str) -> str:
    """`body` with its smoke line replaced by `line`; inserted before the fingerprint marker if it has none."""
    if _SMOKE_LINE.search(body):
        return _SMOKE_LINE.sub(lambda _: line, body, count=1)
    marker = _FINGERPRINT_MARKER.search(body)
    if marker is None:
        return body
    return body[: marker.start()] + line + "\n\n" + body[marker.start() :]


# -- placement -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Placement:
    """Where an inline comment goes: head lines `start_line..line` of `path` (RIGHT side)."""

    path: str
    line: int
    start_line: int | None = None  # None for a one-line comment; else < line, same hunk
    suggestion: str | None = None  # the replacement text of a ```suggestion block


def place_finding(finding: Finding, changes: ChangeSet) -> Placement | None:
    """Where GitHub will take this finding's comment, or None when its lines are not in the diff.

    A fix becomes a suggestion block only when its lines lie in one hunk of the same file, because a
    suggestion replaces exactly the commented range.
    """
    change = changes.get(finding.path)
    if change is None or finding.line not in change.commentable or not is_printable_path(finding.path):
        return None  # (GitHub cannot name a file whose name is not UTF-8: the check run tells it)
    fix = finding.fix
    if fix is not None and fix.path == finding.path and _range_in_one_hunk(change, fix.line, fix.end_line):
        start = fix.line if fix.end_line > fix.line else None
        return Placement(finding.path, fix.end_line, start, fix.replacement)
    end = finding.end_line
    if end > finding.line and end - finding.line < 40 and _range_in_one_hunk(change, finding.line, end):
        return Placement(finding.path, end, finding.line)
    return Placement(finding.path, finding.line)


def _range_in_one_hunk(change, first: int, last: int) -> bool:
    if last < first:
        return False
    hunk = change.hunk_of(first)
    if hunk is None or change.hunk_of(last) != hunk:
        return False
    return all(line in change.commentable for line in range(first, last + 1))


def placement_is_valid(placement: Placement, changes: ChangeSet) -> bool:
    """Whether GitHub accepts a comment at this placement (the check made before posting)."""
    change = changes.get(placement.path)
    if change is None:
        return False
    first = placement.start_line if placement.start_line is not None else placement.line
    if placement.start_line is not None and placement.start_line >= placement.line:
        return False
    return _range_in_one_hunk(change, first, placement.line)


# -- the smoke line --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SmokeNote:
    """What the bot's inline comments say about the GPU smoke job for one head commit."""

    state: str  # pending | waiting | not-required | completed | silent | not-started
    head_sha: str
    conclusion: str | None = None  # completed: the workflow run's conclusion
    run_url: str | None = None  # completed: the workflow run's html_url
    timeout_s: float | None = None  # silent: how long the App waited for a report


_SEE_CHECK = f"See the `{SMOKE_CHECK_RUN_NAME}` check"
_TRY_AGAIN = "a maintainer can comment `/pr-check smoke` to try again"


def render_smoke_line(note: SmokeNote, rule: str) -> str:
    """The one line of an inline comment that tells what the GPU smoke job made of its finding."""
    at = f"`{note.head_sha[:7]}`"
    run = f"[workflow run]({note.run_url})" if note.run_url else "the workflow run"
    if note.state == "completed" and note.conclusion == "failure":
        text = (
            f"GPU smoke job **failed** on {at}: {run}. The link contract this finding describes failed on "
            "a real GPU; the run's report has the loader's message."
        )
    elif note.state == "completed" and note.conclusion == "success":
        text = (
            f"GPU smoke job **passed** on {at}: {run}. The link failure this finding predicts did not "
            "reproduce on a real GPU."
        )
    elif note.state == "completed":
        text = f"GPU smoke job ended **{note.conclusion or 'without a conclusion'}** on {at}, with no verdict: {run}."
    elif note.state == "pending":
        text = f"GPU smoke job **pending** on {at}: it will prove or disprove this on a real GPU. {_SEE_CHECK}."
    elif note.state == "waiting":
        text = (
            f"GPU smoke job **waiting for a maintainer** on {at}: a maintainer can comment `/pr-check smoke` "
            f"to prove or disprove this on a real GPU. {_SEE_CHECK}."
        )
    elif note.state == "silent":
        text = f"GPU smoke job **did not report** within {duration_text(note.timeout_s or 0)} on {at}. {_SEE_CHECK}; {_TRY_AGAIN}."
    elif note.state == "not-started":
        text = f"GPU smoke job **could not start** on {at}. {_SEE_CHECK}; {_TRY_AGAIN}."
    else:  # not-required
        text = (
            f"GPU smoke job **not required** on {at}: the change does not touch CUDA, so the "
            f"`{SMOKE_CHECK_RUN_NAME}` check does not run; a maintainer can ask for it with `/pr-check smoke`."
        )
    return f"{text} {smoke_marker(rule, note.head_sha)}"


# -- comment bodies --------------------------------------------------------------------------
def render_comment_body(
    finding: Finding | FindingGroup,
    placement: Placement | None,
    smoke: SmokeNote | None = None,
    smoke_rules: frozenset[str] = frozenset(),
) -> str:
    """Markdown of one inline comment: rule, message, what it groups, evidence (capped), fix, the
    smoke line, the hidden marker.

    A group of near-duplicates (`bot.render.finding_groups`) is one comment: its lead's message, then the
    other targets, places and rules it stands for. The smoke line appears when `smoke` is given on
    findings of `smoke_rules`: the rules tagged smoke-verified (the GPU smoke job proves or
    disproves them; `pr_check.review.SMOKE_VERIFIED_RULES`).
    """
    group = finding if isinstance(finding, FindingGroup) else FindingGroup(finding)
    lead = group.lead
    parts = [f"**{lead.rule}** ({group.severity.label}): {lead.title}", "", lead.message.strip()]
    if lead.target and len(group.targets) <= 1:
        parts += ["", f"Target: `{lead.target}`" + (f" (cell `{lead.cell}`)" if lead.cell else "")]
    grouped = group_lines(group)
    if grouped:
        parts += ["", *grouped]
    if group.evidence:
        parts += ["", "Evidence:", *evidence_lines(group.evidence)]
    fix = lead.fix
    if fix is not None:
        description = fix.description.strip() or "Suggested fix"
        if placement is not None and placement.suggestion is not None:
            parts += ["", description + ":", "```suggestion", placement.suggestion.rstrip("\n"), "```"]
        else:  # outside the diff (or in another file): no suggestion can stand there, so a patch
            parts += ["", *collapsed_fix(fix)]
    tail = [fingerprint_marker(group.fingerprint)]
    if smoke is not None and lead.rule in smoke_rules:
        tail.insert(0, render_smoke_line(smoke, lead.rule))
    ending = "\n\n".join(tail)
    body = "\n".join(parts) + "\n\n" + ending
    if len(body) > COMMENT_BODY_LIMIT:
        body = body[: COMMENT_BODY_LIMIT - len(ending) - 40] + "\n\n(trimmed; see the check run)\n" + ending
    return body


# -- the plan for a push ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PostedComment:
    """One of the bot's own top-level inline comments, as GitHub shows it now."""

    id: int
    path: str
    line: int | None  # None when GitHub shows the comment as outdated
    start_line: int | None
    body: str
    human_replied: bool = False  # someone other than the bot answered in the thread
    fixed_reply_posted: bool = False  # the bot already said "Fixed in ..." in the thread
    html_url: str = ""  # where GitHub shows the comment

    @property
    def fingerprint(self) -> str | None:
        return marked_fingerprint(self.body)


@dataclass(frozen=True, slots=True)
class PostedReview:
    """One of the bot's own reviews on the pull request."""

    id: int
    state: str  # COMMENTED | CHANGES_REQUESTED | DISMISSED | ...
    head_sha: str | None  # from the review's hidden marker


@dataclass(frozen=True, slots=True)
class NewComment:
    """An inline comment to post in the review (RIGHT side)."""

    path: str
    line: int
    body: str
    fingerprint: str
    start_line: int | None = None

    def to_api(self) -> dict:
        """The `comments[]` item of `POST /pulls/{n}/reviews`."""
        item = {"path": self.path, "line": self.line, "side": "RIGHT", "body": self.body}
        if self.start_line is not None:
            item["start_line"] = self.start_line
            item["start_side"] = "RIGHT"
        return item


@dataclass(frozen=True, slots=True)
class ReviewPlan:
    """Everything to send to GitHub for one head commit, besides the check run."""

    head_sha: str
    comments: tuple[NewComment, ...]  # new inline comments, all validated against the diff
    edits: tuple[tuple[int, str], ...]  # (comment id, new body)
    deletions: tuple[int, ...]  # comment ids
    replies: tuple[tuple[int, str], ...]  # (comment id, reply body): fixed findings a human discussed
    kept: tuple[int, ...]  # comment ids left as they are
    off_diff: tuple[Finding, ...]  # findings whose lines the diff does not contain
    event: str  # REQUEST_CHANGES | COMMENT
    body: str
    post_review: bool  # False when the review would add nothing (every comment already stands)
    dismissals: tuple[int, ...]  # the bot's standing change requests that no blocker backs any more


def plan_review(
    findings: Sequence[Finding],
    changes: ChangeSet,
    posted: Sequence[PostedComment],
    posted_reviews: Sequence[PostedReview],
    head_sha: str,
    smoke: SmokeNote | None = None,
    smoke_rules: frozenset[str] = frozenset(),
    inline_level: Severity = INLINE_LEVEL,
) -> ReviewPlan:
    """Decide comments to post, keep, edit, delete or answer, and the review around them.

    The comment budget: near-duplicates are grouped (`bot.render.finding_groups`), and a group gets an
    inline comment only at or above `inline_level` (`[review] inline_level`); the rest is listed
    in the review body, the lesser ones in one collapsed section (`bot.render.review_body`).
    A group keeps the comment of its lead's fingerprint; a standing comment of one of its other
    members is a duplicate now, so it goes (or stays, when someone discussed it): it is never
    answered "Fixed", because its finding is still there.

    `smoke`: what the GPU smoke job stands at for this head, for the smoke line of the findings it
    bears on. A standing comment's smoke line about this same head is newer than anything the review
    knows (the smoke job edits it), so it is carried along, never reset.
    """
    groups = group_findings(findings)
    current = {group.fingerprint: group for group in groups}
    grouped_away = {member.fingerprint for group in groups for member in group.others} - set(current)
    by_fingerprint: dict[str, list[PostedComment]] = {}
    for comment in sorted(posted, key=lambda c: c.id):
        if comment.fingerprint is not None:
            by_fingerprint.setdefault(comment.fingerprint, []).append(comment)

    edits: list[tuple[int, str]] = []
    deletions: list[int] = []
    replies: list[tuple[int, str]] = []
    kept: list[int] = []
    standing: set[str] = set()  # fingerprints that keep a visible comment

    for fingerprint_, comments in by_fingerprint.items():
        group = current.get(fingerprint_)
        if fingerprint_ in grouped_away:
            # Still found, now shown in its group's comment: a duplicate, never "Fixed".
            kept += [comment.id for comment in comments if comment.human_replied]
            deletions += [comment.id for comment in comments if not comment.human_replied]
            continue
        if group is not None:
            # A thread the bot closed with "Fixed in ..." is left as it is: a finding that came back
            # gets a comment of its own, not an edit of a thread whose last word says it is fixed.
            kept += [comment.id for comment in comments if comment.fixed_reply_posted]
            comments = [comment for comment in comments if not comment.fixed_reply_posted]
        for index, comment in enumerate(comments):
            if group is None:
                # The finding is gone: a plain comment goes; a discussed one is answered instead.
                if comment.human_replied:
                    if not comment.fixed_reply_posted:
                        replies.append((comment.id, f"{FIXED_REPLY_PREFIX}{head_sha}."))
                    kept.append(comment.id)
                else:
                    deletions.append(comment.id)
                continue
            if index > 0 or (comment.line is None and not comment.human_replied):
                # A duplicate, or a comment GitHub shows as outdated: the finding is posted afresh.
                if comment.human_replied:
                    kept.append(comment.id)
                else:
                    deletions.append(comment.id)
                continue
            # The comment stands where GitHub shows it; its body must suit that place.
            sitting = Placement(comment.path, comment.line, comment.start_line) if comment.line is not None else None
            wanted = place_finding(group.lead, changes)
            if (
                sitting is not None
                and wanted is not None
                and (wanted.start_line, wanted.line) == (sitting.start_line, sitting.line)
            ):
                sitting = wanted  # same lines: the suggestion block still applies
            body = render_comment_body(group, sitting, smoke, smoke_rules)
            standing_smoke = marked_smoke(comment.body)
            if standing_smoke is not None and standing_smoke.head_sha == head_sha and group.lead.rule in smoke_rules:
                body = with_smoke_line(body, standing_smoke.line)
            if body != comment.body:
                edits.append((comment.id, body))
            else:
                kept.append(comment.id)
            standing.add(fingerprint_)

    new_comments: list[NewComment] = []
    off_diff: list[Finding] = []
    loud_off_diff: list[FindingGroup] = []
    for group in groups:
        placement = place_finding(group.lead, changes)
        if placement is None or not placement_is_valid(placement, changes):
            off_diff += group.members
            if group.severity >= inline_level:
                loud_off_diff.append(group)
            continue
        if group.fingerprint in standing or group.severity < inline_level:
            continue
        new_comments.append(
            NewComment(
                path=placement.path,
                line=placement.line,
                start_line=placement.start_line,
                body=render_comment_body(group, placement, smoke, smoke_rules),
                fingerprint=group.fingerprint,
            )
        )

    has_blocker = any(finding.severity >= Severity.BLOCKER for finding in findings)
    ours = [review for review in posted_reviews if review.head_sha is not None]
    change_requests = [review.id for review in ours if review.state == "CHANGES_REQUESTED"]
    already_for_head = any(review.head_sha == head_sha for review in ours)
    # New inline comments always go out (for a head already reviewed, they are ones GitHub refused or
    # someone deleted); otherwise a review is posted once per head, and only when it says something.
    post_review = bool(new_comments) or (
        not already_for_head
        and bool(
            (findings and not ours)  # the first review of this pull request with findings
            or (has_blocker and not change_requests)
        )
    )
    body = render_review_body(
        groups, len(new_comments), loud_off_diff, inline_level, head_sha, review_marker(head_sha), CHECK_RUN_NAME
    )
    return ReviewPlan(
        head_sha=head_sha,
        comments=tuple(new_comments),
        edits=tuple(edits),
        deletions=tuple(deletions),
        replies=tuple(replies),
        kept=tuple(kept),
        off_diff=tuple(off_diff),
        event="REQUEST_CHANGES" if has_blocker else "COMMENT",
        body=body,
        post_review=post_review,
        dismissals=() if has_blocker else tuple(change_requests),
    )


# -- the smoke job's word on standing comments -----------------------------------------------
@dataclass(frozen=True, slots=True)
class SmokeLinePlan:
    """The comment edits that bring the smoke lines of one head up to date, and what they link."""

    edits: tuple[tuple[int, str], ...]  # (comment id, new body); none for a line already saying it
    linked: tuple[SmokeLinked, ...]


def plan_smoke_lines(posted: Sequence[PostedComment], note: SmokeNote) -> SmokeLinePlan:
    """Rewrite the smoke line of every bot comment that speaks of `note.head_sha`; others are not ours to touch."""
    edits: list[tuple[int, str]] = []
    linked: list[SmokeLinked] = []
    for comment in sorted(posted, key=lambda c: c.id):
        mark = marked_smoke(comment.body)
        if mark is None or comment.fingerprint is None or mark.head_sha != note.head_sha:
            continue
        body = with_smoke_line(comment.body, render_smoke_line(note, mark.rule))
        if body != comment.body:
            edits.append((comment.id, body))
        linked.append(SmokeLinked(mark.rule, comment.path, comment.line, comment.html_url))
    return SmokeLinePlan(tuple(edits), tuple(linked))
