"""The endpoints: one function per (method, path), all in the ROUTES table at the bottom.

Each route gets the State (its lock held) and the authenticated Call, and returns a Reply or raises
Abort. Error texts are GitHub's where they are known from real responses (see
shared/github/api-facts.md); the few that are not are marked "unverified".
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import gitdata, gitrepos, shapes
from .credentials import grants, new_token
from .exchange import Abort, Call, Reply, error, invalid_request, not_found, page, validation_failed
from .records import CheckRun, IssueComment, Pull, PullHead, Reaction, Review, ReviewComment, WorkflowRun
from .state import State, now_iso

DOC_PULL = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"
DOC_FILES = "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files"
DOC_REVIEW = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
DOC_REVIEW_COMMENT = "https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request"
DOC_ISSUE_COMMENT = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
DOC_REACTION = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment"
DOC_CHECK_CREATE = "https://docs.github.com/rest/checks/runs#create-a-check-run"
DOC_CHECK_UPDATE = "https://docs.github.com/rest/checks/runs#update-a-check-run"
DOC_DISPATCH = "https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event"
DOC_TOKEN = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"

LINE_NOT_IN_DIFF = (
    "Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"
)
PATH_NOT_IN_DIFF = "Pull request review thread path is invalid and Pull request review thread diff hunk can't be blank"
START_NOT_IN_HUNK = "Pull request review thread start line must be part of the same hunk as the line."
START_AFTER_END = "Pull request review thread start line must precede the end line"
LINE_UNRESOLVED = "Line could not be resolved"
POSITION_UNRESOLVED = "Position could not be resolved"
BODY_REQUIRED = "Review body is required for the COMMENT and REQUEST_CHANGES events"  # unverified wording
ONE_PENDING = "User can only have one pending review per pull request"

REVIEW_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
CHECK_STATUSES = ("queued", "in_progress", "completed")
CHECK_CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out")
ANNOTATION_LEVELS = ("notice", "warning", "failure")
OUTPUT_LIMIT = 65535
COMMENT_LIMIT = 65536
ANNOTATIONS_PER_REQUEST = 50
DISPATCH_INPUTS_LIMIT = 25


# -- App (JWT) ----------------------------------------------------------------------------------------


def create_access_token(s: State, call: Call) -> Reply:
    installation_id = int(call.params["id"])
    if installation_id not in {r.installation_id for r in s.repos.values()}:
        raise not_found()
    requested = call.json().get("permissions") or {}
    for name, level in requested.items():
        if not grants(s.installation_permissions, name, level):
            raise Abort(error(422, "The permissions requested are not granted to this installation.", DOC_TOKEN))
    permissions = dict(requested) or dict(s.installation_permissions)
    token = new_token(installation_id, permissions, time.time())
    s.tokens[token.value] = token
    s.tokens_issued += 1
    expires = datetime.fromtimestamp(token.expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shape = {"token": token.value, "expires_at": expires, "permissions": permissions, "repository_selection": "all"}
    return Reply(201, shape)


def get_app(s: State, call: Call) -> Reply:
    return Reply(200, s.app_shape())


def _installation_shape(s: State, installation_id: int) -> dict[str, Any]:
    owners = sorted(r.owner for r in s.repos.values() if r.installation_id == installation_id)
    if not owners:
        raise not_found()
    return shapes.installation(s.urls, installation_id, owners[0], s.app, s.installation_permissions)


def list_installations(s: State, call: Call) -> Reply:
    ids = sorted({r.installation_id for r in s.repos.values() if r.installation_id is not None})
    return page(call, [_installation_shape(s, i) for i in ids], s.urls.api)


def get_installation(s: State, call: Call) -> Reply:
    return Reply(200, _installation_shape(s, int(call.params["id"])))


def get_repo_installation(s: State, call: Call) -> Reply:
    repo = s.repos.get((call.params["owner"].lower(), call.params["repo"].lower()))
    if repo is None or repo.installation_id is None:
        raise not_found()
    return Reply(200, _installation_shape(s, repo.installation_id))


def _delivery_shape(d: Any) -> dict[str, Any]:
    status = "OK" if 200 <= d.status_code < 300 else f"Invalid HTTP Response: {d.status_code}"
    return {
        "id": d.id,
        "guid": d.guid,
        "delivered_at": d.delivered_at,
        "redelivery": d.redelivery,
        "duration": 0.05,
        "status": status,
        "status_code": d.status_code,
        "event": d.event,
        "action": d.action,
        "installation_id": d.installation_id,
        "repository_id": d.repository_id,
        "throttled_at": None,
    }


def list_deliveries(s: State, call: Call) -> Reply:
    per_page = min(int(call.query.get("per_page", "30")), 100)
    newest_first = sorted(s.deliveries.values(), key=lambda d: d.id, reverse=True)
    return Reply(200, [_delivery_shape(d) for d in newest_first[:per_page]])


def get_delivery(s: State, call: Call) -> Reply:
    delivery = s.deliveries.get(int(call.params["id"]))
    if delivery is None:
        raise not_found()
    shape = _delivery_shape(delivery)
    shape["url"] = ""
    headers = {"X-GitHub-Event": delivery.event, "X-GitHub-Delivery": delivery.guid}
    shape["request"] = {"headers": headers, "payload": {}}
    shape["response"] = {"headers": {}, "payload": None}
    return Reply(200, shape)


def redeliver(s: State, call: Call) -> Reply:
    delivery_id = int(call.params["id"])
    if delivery_id not in s.deliveries:
        raise not_found()
    s.delivery_attempts.append(delivery_id)
    return Reply(202, {})


# -- Repository, pull request, diff, files, commits -------------------------------------------------


def get_repo(s: State, call: Call) -> Reply:
    return Reply(200, shapes.repo(s.urls, s.repo_for(call)))


def get_pull(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    if "diff" in call.headers.get("accept", ""):
        return _diff_reply(s, pull)
    return Reply(200, s.pull_shape(pull))


def _diff_reply(s: State, pull: Pull) -> Reply:
    head = pull.head
    if len(head.files) > s.max_diff_files:
        message = (
            f"Sorry, the diff exceeded the maximum number of files ({s.max_diff_files}). Consider using "
            "'List pull requests files' API or locally cloning the repository instead."
        )
    elif len(head.diff_text.splitlines()) > s.max_diff_lines:
        message = f"Sorry, the diff exceeded the maximum number of lines ({s.max_diff_lines})"
    else:
        return Reply(200, head.diff_text, {"Content-Type": "text/plain; charset=utf-8"})
    too_large = [{"resource": "PullRequest", "field": "diff", "code": "too_large"}]
    return Reply(406, error(406, message, DOC_FILES, too_large).body)


def list_pull_files(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    files = pull.head.files[:3000]
    entries = [
        shapes.diff_entry(s.urls, pull.repo, pull.head.sha, f, with_patch=f.path not in pull.binary_paths)
        for f in files
    ]
    return page(call, entries, s.urls.api)


def get_commit(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    return Reply(200, s.commit_shape(repo, call.params["ref"]))


# -- Reviews and review comments -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a review comment lands, once checked against the diff."""

    path: str
    side: str | None
    line: int | None
    start_line: int | None
    start_side: str | None
    position: int | None
    diff_hunk: str
    subject_type: str


def anchor_comment(head: PullHead, comment: dict[str, Any]) -> Anchor | str:
    """The comment's place in `head`'s diff, or GitHub's complaint about it."""
    path = comment.get("path")
    file = next((f for f in head.files if f.path == path), None)
    if file is None:
        return PATH_NOT_IN_DIFF
    if comment.get("subject_type") == "file":
        return Anchor(file.path, None, None, None, None, None, "", "file")
    line, position = comment.get("line"), comment.get("position")
    if line is None and position is not None:
        found = file.find_position(position) if isinstance(position, int) else None
        if found is None:
            return POSITION_UNRESOLVED
        hunk_index, row = found
        side, line = ("LEFT", row.old) if row.kind == "-" else ("RIGHT", row.new)
        return Anchor(file.path, side, line, None, None, row.position, file.hunk_text_through(hunk_index, row), "line")
    if not isinstance(line, int):
        return LINE_UNRESOLVED
    side = comment.get("side") or "RIGHT"
    found = file.find_line(side, line)
    if found is None:
        return LINE_NOT_IN_DIFF
    hunk_index, row = found
    start_line = comment.get("start_line")
    start_side = None
    if start_line is not None:
        start_side = comment.get("start_side") or side
        if not isinstance(start_line, int) or start_line >= line:
            return START_AFTER_END
        start = file.find_line(start_side, start_line)
        if start is None or start[0] != hunk_index:
            return START_NOT_IN_HUNK
    hunk = file.hunk_text_through(hunk_index, row)
    return Anchor(file.path, side, line, start_line, start_side, row.position, hunk, "line")


def _check_comment_fields(comment: Any) -> None:
    """Schema checks GitHub makes before looking at the diff."""
    if not isinstance(comment, dict):
        raise invalid_request(f"For 'items', {comment!r} is not an object.", DOC_REVIEW)
    if not comment.get("path"):
        raise invalid_request("For 'items', \"path\" wasn't supplied.", DOC_REVIEW)
    if not isinstance(comment.get("body"), str):
        raise invalid_request("For 'items', \"body\" wasn't supplied.", DOC_REVIEW)
    for key in ("side", "start_side"):
        value = comment.get(key)
        if value is not None and value not in ("LEFT", "RIGHT"):
            raise invalid_request(f'For \'properties/{key}\', "{value}" is not one of ["LEFT", "RIGHT"].', DOC_REVIEW)


def _new_comment(
    s: State, review: Review, pull: Pull, head: PullHead, anchor: Anchor, body: str, reply_to: int | None
) -> ReviewComment:
    stamp = now_iso()
    comment = ReviewComment(
        id=s.next_id("review_comment"),
        review_id=review.id,
        pull=pull,
        user=review.user,
        body=body,
        path=anchor.path,
        side=anchor.side,
        line=anchor.line,
        start_line=anchor.start_line,
        start_side=anchor.start_side,
        original_line=anchor.line,
        original_start_line=anchor.start_line,
        position=anchor.position,
        original_position=anchor.position,
        diff_hunk=anchor.diff_hunk,
        commit_id=head.sha,
        original_commit_id=head.sha,
        subject_type=anchor.subject_type,
        in_reply_to_id=reply_to,
        created_at=stamp,
        updated_at=stamp,
    )
    s.review_comments[comment.id] = comment
    return comment


def _head_for_commit(s: State, pull: Pull, commit_id: Any) -> PullHead:
    head = s.head_of(pull, commit_id if isinstance(commit_id, str) else None)
    if head is None:
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [f"No commit found for SHA: {commit_id}"]))
    return head


def create_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    body = call.json()
    event = body.get("event") or None
    if event is not None and event not in REVIEW_STATES:
        raise invalid_request(
            f'For \'properties/event\', "{event}" is not one of ["APPROVE", "REQUEST_CHANGES", "COMMENT"].', DOC_REVIEW
        )
    head = _head_for_commit(s, pull, body.get("commit_id"))
    text = body.get("body") or ""
    if event in ("COMMENT", "REQUEST_CHANGES") and not text.strip():
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [BODY_REQUIRED]))
    user = s.app.bot_login
    if event is None and any(r.pull is pull and r.user == user and r.state == "PENDING" for r in s.reviews.values()):
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [ONE_PENDING]))
    comments = body.get("comments") or []
    anchors: list[Anchor] = []
    for comment in comments:
        _check_comment_fields(comment)
        anchor = anchor_comment(head, comment)
        if isinstance(anchor, str):
            raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [anchor]))  # nothing stored
        anchors.append(anchor)
    review = Review(
        id=s.next_id("review"),
        pull=pull,
        user=user,
        body=text,
        state=REVIEW_STATES[event] if event else "PENDING",
        commit_id=head.sha,
        submitted_at=now_iso() if event else None,
    )
    s.reviews[review.id] = review
    for anchor, comment in zip(anchors, comments, strict=True):
        _new_comment(s, review, pull, head, anchor, comment["body"], None)
    return Reply(200, shapes.review(s.urls, review))


def list_reviews(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    reviews = [shapes.review(s.urls, r) for r in sorted(s.reviews.values(), key=lambda r: r.id) if r.pull is pull]
    return page(call, reviews, s.urls.api)


def get_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    return Reply(200, shapes.review(s.urls, s.review_for(call, pull)))


def update_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    review = s.review_for(call, pull)
    text = call.json().get("body")
    if not isinstance(text, str):
        raise invalid_request('"body" wasn\'t supplied.', DOC_REVIEW)
    review.body = text
    return Reply(200, shapes.review(s.urls, review))


def delete_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    review = s.review_for(call, pull)
    if review.state != "PENDING":
        problem = "Can not delete a non-pending pull request review"
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [problem]))
    del s.reviews[review.id]
    for comment in s.review_comments.values():
        if comment.review_id == review.id:
            comment.deleted = True
    return Reply(200, shapes.review(s.urls, review))


def submit_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    review = s.review_for(call, pull)
    body = call.json()
    event = body.get("event")
    if event not in REVIEW_STATES:
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, ["Unknown review event"]))
    if review.state != "PENDING":
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, ["Can not submit a non-pending review"]))
    text = body.get("body") or review.body
    if event in ("COMMENT", "REQUEST_CHANGES") and not text.strip():
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, [BODY_REQUIRED]))
    review.body, review.state, review.submitted_at = text, REVIEW_STATES[event], now_iso()
    return Reply(200, shapes.review(s.urls, review))


def dismiss_review(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    review = s.review_for(call, pull)
    if not call.json().get("message"):
        raise invalid_request('"message" wasn\'t supplied.', DOC_REVIEW)
    if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
        # GitHub only dismisses approvals and change requests (unverified wording).
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW, ["Can not dismiss a commented pull request review"]))
    review.state = "DISMISSED"
    return Reply(200, shapes.review(s.urls, review))


def _comment_shapes(s: State, comments: list[ReviewComment]) -> list[dict[str, Any]]:
    return [shapes.review_comment(s.urls, c, s.reactions_of(c.id)) for c in comments]


def list_pull_comments(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    comments = sorted(
        (c for c in s.review_comments.values() if c.pull is pull and not c.deleted),
        key=lambda c: (c.updated_at if call.query.get("sort") == "updated" else c.created_at, c.id),
        reverse=call.query.get("direction") == "desc",
    )
    since = call.query.get("since")
    if since:
        comments = [c for c in comments if c.updated_at >= since]
    return page(call, _comment_shapes(s, comments), s.urls.api)


def list_review_comments(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    review = s.review_for(call, pull)
    comments = sorted(
        (c for c in s.review_comments.values() if c.review_id == review.id and not c.deleted), key=lambda c: c.id
    )
    return page(call, _comment_shapes(s, comments), s.urls.api)


def get_pull_comment(s: State, call: Call) -> Reply:
    comment = s.review_comment_for(call, s.repo_for(call))
    return Reply(200, shapes.review_comment(s.urls, comment, s.reactions_of(comment.id)))


def edit_pull_comment(s: State, call: Call) -> Reply:
    comment = s.review_comment_for(call, s.repo_for(call))
    text = call.json().get("body")
    if not isinstance(text, str) or not text:
        raise invalid_request('"body" wasn\'t supplied.', DOC_REVIEW_COMMENT)
    comment.body, comment.updated_at = text, now_iso()
    return Reply(200, shapes.review_comment(s.urls, comment, s.reactions_of(comment.id)))


def delete_pull_comment(s: State, call: Call) -> Reply:
    comment = s.review_comment_for(call, s.repo_for(call))
    comment.deleted = True
    return Reply(204)


def _reply_to(s: State, call: Call, pull: Pull, target_id: Any, text: str) -> Reply:
    target = s.review_comments.get(target_id) if isinstance(target_id, int) else None
    if target is None or target.deleted or target.pull is not pull:
        raise not_found()
    root = s.review_comments[target.in_reply_to_id] if target.in_reply_to_id is not None else target
    review = _single_comment_review(s, pull, root.commit_id)
    anchor = Anchor(
        root.path,
        root.side,
        root.line,
        root.start_line,
        root.start_side,
        root.position,
        root.diff_hunk,
        root.subject_type,
    )
    head = s.head_of(pull, root.commit_id) or pull.head
    comment = _new_comment(s, review, pull, head, anchor, text, root.id)
    comment.original_line, comment.original_position = root.original_line, root.original_position
    return Reply(201, shapes.review_comment(s.urls, comment, []))


def _single_comment_review(s: State, pull: Pull, commit_id: str) -> Review:
    """GitHub wraps every lone review comment (and reply) in a COMMENTED review with an empty body."""
    review = Review(s.next_id("review"), pull, s.app.bot_login, "", "COMMENTED", commit_id, now_iso())
    s.reviews[review.id] = review
    return review


def create_pull_comment(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    body = call.json()
    text = body.get("body")
    if not isinstance(text, str) or not text:
        raise invalid_request('"body" wasn\'t supplied.', DOC_REVIEW_COMMENT)
    if body.get("in_reply_to") is not None:
        return _reply_to(s, call, pull, body["in_reply_to"], text)
    if not body.get("commit_id"):
        raise invalid_request('"commit_id" wasn\'t supplied.', DOC_REVIEW_COMMENT)
    head = s.head_of(pull, body["commit_id"])
    if head is None:
        problem = f"No commit found for SHA: {body['commit_id']}"
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW_COMMENT, [problem]))
    if not body.get("path"):
        raise invalid_request('"path" wasn\'t supplied.', DOC_REVIEW_COMMENT)
    anchor = anchor_comment(head, body)
    if isinstance(anchor, str):
        raise Abort(error(422, "Unprocessable Entity", DOC_REVIEW_COMMENT, [anchor]))
    review = _single_comment_review(s, pull, head.sha)
    comment = _new_comment(s, review, pull, head, anchor, text, None)
    return Reply(201, shapes.review_comment(s.urls, comment, []))


def reply_to_pull_comment(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    text = call.json().get("body")
    if not isinstance(text, str) or not text:
        raise invalid_request('"body" wasn\'t supplied.', DOC_REVIEW_COMMENT)
    return _reply_to(s, call, pull, int(call.params["id"]), text)


# -- Issues, issue comments, reactions -----------------------------------------------------------------


def get_issue(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    return Reply(200, shapes.issue_of_pull(s.urls, pull, comments=s.issue_comment_count(pull.repo, pull.number)))


def _issue_comment_shape(s: State, c: IssueComment) -> dict[str, Any]:
    return shapes.issue_comment(s.urls, c, s.reactions_of(c.id))


def list_issue_comments(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    comments = sorted(
        (c for c in s.issue_comments.values() if c.repo is pull.repo and c.number == pull.number and not c.deleted),
        key=lambda c: c.id,
    )
    since = call.query.get("since")
    if since:
        comments = [c for c in comments if c.updated_at >= since]
    return page(call, [_issue_comment_shape(s, c) for c in comments], s.urls.api)


def _comment_body(call: Call) -> str:
    text = call.json().get("body")
    if not isinstance(text, str) or not text:
        missing = {"resource": "IssueComment", "code": "missing_field", "field": "body"}
        raise validation_failed(DOC_ISSUE_COMMENT, missing)
    if len(text) > COMMENT_LIMIT:
        raise validation_failed(
            DOC_ISSUE_COMMENT,
            {
                "resource": "IssueComment",
                "code": "unprocessable",
                "field": "data",
                "message": f"Body is too long (maximum is {COMMENT_LIMIT} characters)",
            },
        )
    return text


def create_issue_comment(s: State, call: Call) -> Reply:
    pull = s.pull_for(call)
    text = _comment_body(call)
    stamp = now_iso()
    comment = IssueComment(
        s.next_id("issue_comment"), pull.repo, pull.number, s.app.bot_login, "Bot", "NONE", text, stamp, stamp
    )
    s.issue_comments[comment.id] = comment
    return Reply(201, _issue_comment_shape(s, comment))


def get_issue_comment(s: State, call: Call) -> Reply:
    return Reply(200, _issue_comment_shape(s, s.issue_comment_for(call, s.repo_for(call))))


def edit_issue_comment(s: State, call: Call) -> Reply:
    comment = s.issue_comment_for(call, s.repo_for(call))
    comment.body, comment.updated_at = _comment_body(call), now_iso()
    return Reply(200, _issue_comment_shape(s, comment))


def delete_issue_comment(s: State, call: Call) -> Reply:
    s.issue_comment_for(call, s.repo_for(call)).deleted = True
    return Reply(204)


def create_reaction(s: State, call: Call) -> Reply:
    comment = s.issue_comment_for(call, s.repo_for(call))
    content = call.json().get("content")
    if content not in shapes.REACTION_CONTENTS:
        raise invalid_request(
            f"For 'properties/content', {content!r} is not one of {list(shapes.REACTION_CONTENTS)}.", DOC_REACTION
        )
    user = s.app.bot_login
    for existing in s.reactions_of(comment.id):
        if existing.user == user and existing.content == content:
            return Reply(200, shapes.reaction(s.urls, existing))
    made = Reaction(s.next_id("reaction"), comment.id, user, "Bot", content, now_iso())
    s.reactions.append(made)
    return Reply(201, shapes.reaction(s.urls, made))


def list_reactions(s: State, call: Call) -> Reply:
    comment = s.issue_comment_for(call, s.repo_for(call))
    found = [r for r in s.reactions_of(comment.id) if call.query.get("content") in (None, r.content)]
    return page(call, [shapes.reaction(s.urls, r) for r in found], s.urls.api)


# -- Check runs ----------------------------------------------------------------------------------------


def _check_output(output: Any, doc: str) -> dict[str, Any]:
    if not isinstance(output, dict):
        raise invalid_request("For 'properties/output', it is not an object.", doc)
    for key in ("title", "summary"):
        if not isinstance(output.get(key), str):
            raise invalid_request(f"For 'properties/output', \"{key}\" wasn't supplied.", doc)
    for key in ("summary", "text"):
        value = output.get(key)
        if isinstance(value, str):
            if len(value) > OUTPUT_LIMIT:
                raise invalid_request(f"Only {OUTPUT_LIMIT} characters are allowed; {len(value)} were supplied.", doc)
            if len(value.encode()) > OUTPUT_LIMIT:
                raise validation_failed(
                    doc,
                    {
                        "resource": "CheckRun",
                        "code": "custom",
                        "field": key,
                        "message": f"{key} exceeds a maximum bytesize of {OUTPUT_LIMIT}",
                    },
                )
    annotations = output.get("annotations") or []
    if len(annotations) > ANNOTATIONS_PER_REQUEST:
        raise invalid_request(
            f"No more than {ANNOTATIONS_PER_REQUEST} items are allowed; {len(annotations)} were supplied.", doc
        )
    for annotation in annotations:
        for key in ("path", "start_line", "end_line", "annotation_level", "message"):
            if annotation.get(key) in (None, ""):
                raise invalid_request(f"For 'items', \"{key}\" wasn't supplied.", doc)
        if annotation["annotation_level"] not in ANNOTATION_LEVELS:
            raise invalid_request(
                f"For 'properties/annotation_level', \"{annotation['annotation_level']}\" is not one of "
                '["notice", "warning", "failure"].',
                doc,
            )
        if annotation["start_line"] > annotation["end_line"]:
            problem = {"resource": "CheckRun", "code": "custom", "field": "annotations"}
            raise validation_failed(doc, problem)  # unverified wording
    return output


def _check_actions(actions: Any, doc: str) -> list[dict[str, Any]]:
    if len(actions) > 3:
        raise invalid_request(f"No more than 3 items are allowed; {len(actions)} were supplied.", doc)
    for action in actions:
        for key, limit in (("label", 20), ("description", 40), ("identifier", 20)):
            value = action.get(key)
            if not isinstance(value, str):
                raise invalid_request(f"For 'items', \"{key}\" wasn't supplied.", doc)
            if len(value) > limit:
                raise invalid_request(f"For 'properties/{key}', \"{value}\" is longer than {limit} characters.", doc)
    return list(actions)


def _apply_check_fields(s: State, run: CheckRun, body: dict[str, Any], doc: str) -> None:
    """Validate everything first, then change `run`: a refused request leaves it untouched."""
    status = body.get("status")
    if status is not None and status not in CHECK_STATUSES:
        raise invalid_request(f"For 'properties/status', \"{status}\" is not one of {list(CHECK_STATUSES)}.", doc)
    conclusion = body.get("conclusion")
    if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
        detail = f"For 'properties/conclusion', \"{conclusion}\" is not one of {list(CHECK_CONCLUSIONS)}."
        raise invalid_request(detail, doc)
    if (status == "completed" or body.get("completed_at")) and conclusion is None and run.conclusion is None:
        blank = {"resource": "CheckRun", "code": "missing_field", "field": "conclusion"}
        raise validation_failed(doc, blank)  # unverified wording
    output = _check_output(body["output"], doc) if "output" in body else None
    actions = _check_actions(body["actions"], doc) if "actions" in body else None
    if conclusion is not None:
        run.status, run.conclusion = "completed", conclusion
        run.completed_at = body.get("completed_at") or run.completed_at or now_iso()
    elif status is not None:
        run.status = status
    for key in ("started_at", "details_url", "external_id", "name"):
        if body.get(key) is not None:
            setattr(run, key, body[key])
    if output is not None:
        run.title, run.summary = output["title"], output["summary"]
        if "text" in output:
            run.text = output["text"]
        run.annotations.extend(dict(a) for a in output.get("annotations") or [])  # GitHub appends
    if actions is not None:
        run.actions = actions


def _known_sha(s: State, call: Call, sha: str) -> bool:
    repo = s.repo_for(call)
    if any(sha in (h.sha, h.base_sha) for p in s.pulls_of(repo) for h in p.heads):
        return True
    if repo.bare_git_path is not None:
        try:
            return gitrepos.rev_parse(repo.bare_git_path, sha) == sha
        except RuntimeError:
            return False
    return False


def check_run_shape(s: State, run: CheckRun) -> dict[str, Any]:
    """A check run's JSON; `pull_requests` lists same-repository PRs whose head it is on (not forks)."""
    pulls = [p for p in s.pulls_of(run.repo) if p.head.sha == run.head_sha and p.head_repo is run.repo]
    return shapes.check_run(s.urls, run, s.app_shape(), pulls)


def create_check_run(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    body = call.json()
    for key in ("name", "head_sha"):
        if not body.get(key):
            raise invalid_request(f'"{key}" wasn\'t supplied.', DOC_CHECK_CREATE)
    if not _known_sha(s, call, body["head_sha"]):
        raise validation_failed(DOC_CHECK_CREATE, {"resource": "CheckRun", "code": "invalid", "field": "head_sha"})
    suite_key = (repo.owner, repo.name, body["head_sha"])
    if suite_key not in s.suites:
        s.suites[suite_key] = s.next_id("suite")
    run = CheckRun(
        id=0,
        repo=repo,
        suite_id=s.suites[suite_key],
        name=body["name"],
        head_sha=body["head_sha"],
        status="queued",
        conclusion=None,
        started_at=now_iso(),
        completed_at=None,
        details_url=None,
        external_id=None,
        title=None,
        summary=None,
        text=None,
    )
    _apply_check_fields(s, run, body, DOC_CHECK_CREATE)
    run.id = s.next_id("check_run")
    s.check_runs[run.id] = run
    return Reply(201, check_run_shape(s, run))


def update_check_run(s: State, call: Call) -> Reply:
    run = s.check_run_for(call, s.repo_for(call))
    _apply_check_fields(s, run, call.json(), DOC_CHECK_UPDATE)
    run.requests += 1
    return Reply(200, check_run_shape(s, run))


def get_check_run(s: State, call: Call) -> Reply:
    return Reply(200, check_run_shape(s, s.check_run_for(call, s.repo_for(call))))


def list_annotations(s: State, call: Call) -> Reply:
    run = s.check_run_for(call, s.repo_for(call))
    return page(call, [shapes.annotation(s.urls, run, a) for a in run.annotations], s.urls.api)


def list_check_runs_for_ref(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    ref = call.params["ref"]
    sha = ref
    if repo.bare_git_path is not None:
        with contextlib.suppress(RuntimeError):
            sha = gitrepos.rev_parse(repo.bare_git_path, ref)
    runs = sorted((r for r in s.check_runs.values() if r.repo is repo and r.head_sha == sha), key=lambda r: -r.id)
    if call.query.get("check_name"):
        runs = [r for r in runs if r.name == call.query["check_name"]]
    if call.query.get("status"):
        runs = [r for r in runs if r.status == call.query["status"]]
    if call.query.get("filter", "latest") == "latest":
        seen: set[str] = set()
        runs = [r for r in runs if not (r.name in seen or seen.add(r.name))]
    return page(call, [check_run_shape(s, r) for r in runs], s.urls.api, wrap="check_runs")


# -- Actions -------------------------------------------------------------------------------------------


def get_workflow(s: State, call: Call) -> Reply:
    return Reply(200, shapes.workflow(s.urls, s.workflow_for(call, s.repo_for(call))))


def dispatch_workflow(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    workflow = s.workflow_for(call, repo)
    body = call.json()
    ref, inputs = body.get("ref"), body.get("inputs")
    if "return_run_details" in body and not s.run_details:
        # What a server that predates the parameter answers for an unknown body key.
        raise invalid_request('"return_run_details" is not a permitted key.', DOC_DISPATCH)
    if not isinstance(ref, str) or not ref:
        raise invalid_request('"ref" wasn\'t supplied.', DOC_DISPATCH)
    if not isinstance(inputs, dict):
        # GitHub treats `inputs` as optional; the App always sends it (PyGithub does), so insist.
        raise invalid_request('"inputs" wasn\'t supplied.', DOC_DISPATCH)
    if len(inputs) > DISPATCH_INPUTS_LIMIT:
        detail = f"No more than {DISPATCH_INPUTS_LIMIT} properties are allowed; {len(inputs)} were supplied."
        raise invalid_request(detail, DOC_DISPATCH)
    if workflow.inputs is not None:
        unexpected = sorted(set(inputs) - set(workflow.inputs))
        if unexpected:
            quoted = ", ".join(f'"{name}"' for name in unexpected)
            raise Abort(error(422, f"Unexpected inputs provided: [{quoted}]", DOC_DISPATCH))
        for name, required in workflow.inputs.items():
            if required and name not in inputs:
                raise Abort(error(422, f"Required input '{name}' not provided", DOC_DISPATCH))
    head_sha = _resolve_ref(s, repo, ref)
    stamp = now_iso()
    run = WorkflowRun(
        id=s.next_id("run"),
        run_number=1 + sum(1 for r in s.runs.values() if r.workflow is workflow),
        workflow=workflow,
        ref=ref,
        head_sha=head_sha,
        inputs=dict(inputs),
        status="queued",
        conclusion=None,
        actor=s.app.bot_login,
        created_at=stamp,
        updated_at=stamp,
        check_suite_id=s.next_id("suite"),
    )
    s.runs[run.id] = run
    s.dispatches.append(
        {
            "workflow": workflow.file,
            "ref": ref,
            "inputs": dict(inputs),
            "run_id": run.id,
            "return_run_details": bool(body.get("return_run_details")),
            "repo": repo.full_name,
        }
    )
    if body.get("return_run_details"):
        run_shape = shapes.workflow_run(s.urls, run)
        return Reply(200, {"workflow_run_id": run.id, "run_url": run_shape["url"], "html_url": run_shape["html_url"]})
    return Reply(204)


def _resolve_ref(s: State, repo: Any, ref: str) -> str:
    if repo.bare_git_path is None:
        for pull in s.pulls_of(repo):
            if ref in (pull.head_ref, pull.head.sha):
                return pull.head.sha
            if ref in (pull.base_ref, pull.head.base_sha):
                return pull.head.base_sha
        return "0" * 40
    for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        try:
            return gitrepos.rev_parse(repo.bare_git_path, candidate)
        except RuntimeError:
            continue
    raise Abort(error(422, f"No ref found for: {ref}", DOC_DISPATCH))


def get_run(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    run = s.runs.get(int(call.params["id"]))
    if run is None or run.workflow.repo is not repo:
        raise not_found()
    return Reply(200, shapes.workflow_run(s.urls, run))


def list_workflow_runs(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    workflow = s.workflow_for(call, repo)
    runs = sorted((r for r in s.runs.values() if r.workflow is workflow), key=lambda r: -r.id)
    for key in ("status", "head_sha"):
        if call.query.get(key):
            runs = [r for r in runs if getattr(r, key) == call.query[key]]
    if call.query.get("branch"):
        runs = [r for r in runs if r.ref == call.query["branch"]]
    return page(call, [shapes.workflow_run(s.urls, r) for r in runs], s.urls.api, wrap="workflow_runs")


# -- Permissions and rate limit ------------------------------------------------------------------------

_ROLE_TO_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


def collaborator_permission(s: State, call: Call) -> Reply:
    repo = s.repo_for(call)
    login = call.params["user"]
    table = {k.lower(): v for k, v in repo.permissions.items()}
    # Anyone may read a public repository, so GitHub reports "read" for a non-collaborator there.
    role = table.get(login.lower(), "none" if repo.private else "read")
    permission = _ROLE_TO_PERMISSION[role]
    rank = ("none", "read", "triage", "write", "maintain", "admin").index(role)
    user = shapes.user(s.urls, login)
    user["permissions"] = {
        "admin": rank >= 5,
        "maintain": rank >= 4,
        "push": rank >= 3,
        "triage": rank >= 2,
        "pull": rank >= 1,
    }
    user["role_name"] = role
    return Reply(200, {"permission": permission, "role_name": role, "user": user})


def get_rate_limit(s: State, call: Call) -> Reply:
    return Reply(200, shapes.rate_limit(s.rate_limit, s.rate_used, s.rate_reset))


# -- The table -----------------------------------------------------------------------------------------

Handler = Callable[[State, Call], Reply]
Permission = tuple[tuple[str, str], ...]  # alternatives: any one suffices


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: str  # jwt | token | none
    permission: Permission


def _route(method: str, template: str, handler: Handler, auth: str = "token", permission: Permission = ()) -> Route:
    def group(match: re.Match[str]) -> str:
        name = match.group(1)
        return rf"(?P<{name}>\d+)" if name in ("id", "number") else rf"(?P<{name}>[^/]+)"

    regex = re.sub(r"\{(\w+)\}", group, template)
    return Route(method, re.compile(regex + r"/?"), handler, auth, permission)


PR_READ: Permission = (("pull_requests", "read"),)
PR_WRITE: Permission = (("pull_requests", "write"),)
ISSUE_READ: Permission = (("issues", "read"), ("pull_requests", "read"))
ISSUE_WRITE: Permission = (("issues", "write"), ("pull_requests", "write"))
CHECKS_READ: Permission = (("checks", "read"),)
CHECKS_WRITE: Permission = (("checks", "write"),)
ACTIONS_READ: Permission = (("actions", "read"),)
ACTIONS_WRITE: Permission = (("actions", "write"),)
CONTENTS_READ: Permission = (("contents", "read"),)
CONTENTS_WRITE: Permission = (("contents", "write"),)
METADATA: Permission = (("metadata", "read"),)

R = "/repos/{owner}/{repo}"
ROUTES: tuple[Route, ...] = (
    _route("POST", "/app/installations/{id}/access_tokens", create_access_token, "jwt"),
    _route("GET", "/app", get_app, "jwt"),
    _route("GET", "/app/installations", list_installations, "jwt"),
    _route("GET", "/app/installations/{id}", get_installation, "jwt"),
    _route("GET", "/app/hook/deliveries", list_deliveries, "jwt"),
    _route("GET", "/app/hook/deliveries/{id}", get_delivery, "jwt"),
    _route("POST", "/app/hook/deliveries/{id}/attempts", redeliver, "jwt"),
    _route("GET", f"{R}/installation", get_repo_installation, "jwt"),
    _route("GET", R, get_repo, permission=METADATA),
    _route("GET", f"{R}/pulls/{{number}}", get_pull, permission=PR_READ),
    _route("GET", f"{R}/pulls/{{number}}/files", list_pull_files, permission=PR_READ),
    _route("GET", f"{R}/commits/{{ref}}", get_commit, permission=CONTENTS_READ),
    _route("POST", f"{R}/pulls/{{number}}/reviews", create_review, permission=PR_WRITE),
    _route("GET", f"{R}/pulls/{{number}}/reviews", list_reviews, permission=PR_READ),
    _route("GET", f"{R}/pulls/{{number}}/reviews/{{id}}", get_review, permission=PR_READ),
    _route("PUT", f"{R}/pulls/{{number}}/reviews/{{id}}", update_review, permission=PR_WRITE),
    _route("DELETE", f"{R}/pulls/{{number}}/reviews/{{id}}", delete_review, permission=PR_WRITE),
    _route("POST", f"{R}/pulls/{{number}}/reviews/{{id}}/events", submit_review, permission=PR_WRITE),
    _route("PUT", f"{R}/pulls/{{number}}/reviews/{{id}}/dismissals", dismiss_review, permission=PR_WRITE),
    _route("GET", f"{R}/pulls/{{number}}/reviews/{{id}}/comments", list_review_comments, permission=PR_READ),
    _route("GET", f"{R}/pulls/{{number}}/comments", list_pull_comments, permission=PR_READ),
    _route("POST", f"{R}/pulls/{{number}}/comments", create_pull_comment, permission=PR_WRITE),
    _route("POST", f"{R}/pulls/{{number}}/comments/{{id}}/replies", reply_to_pull_comment, permission=PR_WRITE),
    _route("GET", f"{R}/pulls/comments/{{id}}", get_pull_comment, permission=PR_READ),
    _route("PATCH", f"{R}/pulls/comments/{{id}}", edit_pull_comment, permission=PR_WRITE),
    _route("DELETE", f"{R}/pulls/comments/{{id}}", delete_pull_comment, permission=PR_WRITE),
    _route("GET", f"{R}/issues/{{number}}", get_issue, permission=ISSUE_READ),
    _route("GET", f"{R}/issues/{{number}}/comments", list_issue_comments, permission=ISSUE_READ),
    _route("POST", f"{R}/issues/{{number}}/comments", create_issue_comment, permission=ISSUE_WRITE),
    _route("GET", f"{R}/issues/comments/{{id}}", get_issue_comment, permission=ISSUE_READ),
    _route("PATCH", f"{R}/issues/comments/{{id}}", edit_issue_comment, permission=ISSUE_WRITE),
    _route("DELETE", f"{R}/issues/comments/{{id}}", delete_issue_comment, permission=ISSUE_WRITE),
    _route("POST", f"{R}/issues/comments/{{id}}/reactions", create_reaction, permission=ISSUE_WRITE),
    _route("GET", f"{R}/issues/comments/{{id}}/reactions", list_reactions, permission=ISSUE_READ),
    _route("POST", f"{R}/check-runs", create_check_run, permission=CHECKS_WRITE),
    _route("GET", f"{R}/check-runs/{{id}}", get_check_run, permission=CHECKS_READ),
    _route("PATCH", f"{R}/check-runs/{{id}}", update_check_run, permission=CHECKS_WRITE),
    _route("GET", f"{R}/check-runs/{{id}}/annotations", list_annotations, permission=CHECKS_READ),
    _route("GET", f"{R}/commits/{{ref}}/check-runs", list_check_runs_for_ref, permission=CHECKS_READ),
    _route("GET", f"{R}/actions/workflows/{{workflow}}", get_workflow, permission=ACTIONS_READ),
    _route("POST", f"{R}/actions/workflows/{{workflow}}/dispatches", dispatch_workflow, permission=ACTIONS_WRITE),
    _route("GET", f"{R}/actions/workflows/{{workflow}}/runs", list_workflow_runs, permission=ACTIONS_READ),
    _route("GET", f"{R}/actions/runs/{{id}}", get_run, permission=ACTIONS_READ),
    _route("GET", f"{R}/collaborators/{{user}}/permission", collaborator_permission, permission=METADATA),
    _route("GET", "/rate_limit", get_rate_limit, "none"),
    # The Git Data API (gitdata.py): a branch name may hold slashes, hence the wider patterns.
    Route(
        "GET",
        re.compile(r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/git/ref/heads/(?P<branch>.+)"),
        gitdata.get_ref,
        "token",
        CONTENTS_READ,
    ),
    Route(
        "PATCH",
        re.compile(r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/git/refs/heads/(?P<branch>.+)"),
        gitdata.update_ref,
        "token",
        CONTENTS_WRITE,
    ),
    _route("GET", f"{R}/git/commits/{{sha}}", gitdata.get_commit, permission=CONTENTS_READ),
    _route("POST", f"{R}/git/blobs", gitdata.create_blob, permission=CONTENTS_WRITE),
    _route("POST", f"{R}/git/trees", gitdata.create_tree, permission=CONTENTS_WRITE),
    _route("POST", f"{R}/git/commits", gitdata.create_commit, permission=CONTENTS_WRITE),
)
