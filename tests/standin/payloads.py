"""Webhook payloads matching the stand-in's state, for the test to sign and deliver to the App."""

from __future__ import annotations

from typing import Any

from . import shapes
from .records import CheckRun, IssueComment, Pull, Repo, WorkflowRun
from .state import State


def _envelope(s: State, action: str, repo: Repo, sender: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": action,
        "repository": shapes.repo(s.urls, repo),
        "installation": {"id": repo.installation_id, "node_id": shapes.node_id("Installation", repo.installation_id)},
        "sender": sender,
    }


def pull_request(s: State, pull: Pull, action: str, before: str | None) -> dict[str, Any]:
    payload = _envelope(s, action, pull.repo, shapes.user(s.urls, pull.author))
    payload["number"] = pull.number
    payload["pull_request"] = s.pull_shape(pull)
    if action == "synchronize":
        payload["before"] = before
        payload["after"] = pull.head.sha
    return payload


def issue_comment(s: State, pull: Pull, comment: IssueComment, action: str) -> dict[str, Any]:
    sender = shapes.user(s.urls, comment.user, bot=comment.user_type == "Bot")
    payload = _envelope(s, action, pull.repo, sender)
    payload["issue"] = shapes.issue_of_pull(s.urls, pull, comments=s.issue_comment_count(pull.repo, pull.number))
    payload["comment"] = shapes.issue_comment(s.urls, comment, s.reactions_of(comment.id))
    return payload


def workflow_run(s: State, run: WorkflowRun, action: str) -> dict[str, Any]:
    payload = _envelope(s, action, run.workflow.repo, shapes.user(s.urls, run.actor))
    payload["workflow_run"] = shapes.workflow_run(s.urls, run)
    payload["workflow"] = shapes.workflow(s.urls, run.workflow)
    return payload


def check_run(s: State, run: CheckRun, action: str, requested_action: str | None, sender: str) -> dict[str, Any]:
    payload = _envelope(s, action, run.repo, shapes.user(s.urls, sender))
    shape = shapes.check_run(
        s.urls, run, s.app_shape(), [p for p in s.pulls_of(run.repo) if p.head.sha == run.head_sha]
    )
    api = f"{s.urls.api}/repos/{run.repo.full_name}"
    shape["check_suite"] = {
        "id": run.suite_id,
        "node_id": shapes.node_id("CheckSuite", run.suite_id),
        "head_branch": None,
        "head_sha": run.head_sha,
        "status": "completed" if run.status == "completed" else "in_progress",
        "conclusion": run.conclusion,
        "url": f"{api}/check-suites/{run.suite_id}",
        "before": None,
        "after": run.head_sha,
        "pull_requests": shape["pull_requests"],
        "app": shape["app"],
        "created_at": run.started_at,
        "updated_at": run.completed_at or run.started_at,
    }
    payload["check_run"] = shape
    if requested_action is not None:
        payload["requested_action"] = {"identifier": requested_action}
    return payload
