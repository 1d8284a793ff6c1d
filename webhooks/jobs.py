"""Webhook deliveries -> jobs: the few facts each job needs, as frozen values. Pure.

Only what the payload says is trusted here for routing (owner, repository, number, installation);
everything the review depends on is read again from the GitHub API when the job runs, and payload
URLs are never followed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Mapping, Union

from webhooks.commands import find_command_line

PULL_REQUEST_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
WORKFLOW_RUN_ACTIONS = frozenset({"requested", "in_progress", "completed"})


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A repository and the App installation that can act on it."""

    owner: str
    name: str
    installation_id: int | None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True, slots=True)
class PullRequestPushed:
    """A pull request opened or pushed to: review it at `head_sha` unless a newer push exists."""

    repo: RepoRef
    number: int
    head_sha: str
    pushed_at: float  # the payload's pull_request.updated_at, to order pushes that arrive out of order
    action: str


@dataclass(frozen=True, slots=True)
class ReviewRequested:
    """Someone asked for a fresh review at the current head (a re-run of the check)."""

    repo: RepoRef
    number: int
    requested_by: str


@dataclass(frozen=True, slots=True)
class CommandCommented:
    """A `/pr-check` comment on a pull request."""

    repo: RepoRef
    number: int
    comment_id: int
    command_line: str
    commenter: str
    association: str


@dataclass(frozen=True, slots=True)
class WorkflowRunChanged:
    """A workflow run changed state; it may be a GPU smoke run we dispatched."""

    repo: RepoRef
    run_id: int
    name: str
    display_title: str
    status: str
    conclusion: str | None
    html_url: str | None
    head_sha: str | None


Job = Union[PullRequestPushed, ReviewRequested, CommandCommented, WorkflowRunChanged]
_KINDS: dict[str, type] = {cls.__name__: cls for cls in (PullRequestPushed, ReviewRequested, CommandCommented, WorkflowRunChanged)}


@dataclass(frozen=True, slots=True)
class Ignored:
    """A delivery that needs no work, and why."""

    reason: str


def pull_request_key(repo: RepoRef, number: int) -> str:
    """The name jobs of one pull request share (their lock, their latest push)."""
    return f"{repo.owner}/{repo.name}#{number}".lower()


def job_from_delivery(event: str, payload: Mapping) -> Job | Ignored:
    """What work a delivery asks for."""
    if not isinstance(payload, Mapping):
        return Ignored("payload is not an object")
    action = payload.get("action")
    repo = _repo(payload)
    if event == "pull_request":
        if action not in PULL_REQUEST_ACTIONS:
            return Ignored(f"pull_request action {action!r}")
        pull = payload.get("pull_request") or {}
        if repo is None or not isinstance(pull.get("number", payload.get("number")), int):
            return Ignored("pull_request without repository or number")
        if pull.get("draft"):
            return Ignored("draft pull request")
        head = (pull.get("head") or {}).get("sha")
        if not isinstance(head, str):
            return Ignored("pull_request without head sha")
        return PullRequestPushed(repo, int(pull.get("number", payload.get("number"))), head,
                                 _timestamp(pull.get("updated_at")), str(action))
    if event == "issue_comment":
        if action != "created":
            return Ignored(f"issue_comment action {action!r}")
        issue = payload.get("issue") or {}
        comment = payload.get("comment") or {}
        if not issue.get("pull_request"):
            return Ignored("comment on an issue, not a pull request")
        if is_bot(payload.get("sender")) or is_bot(comment.get("user")):
            return Ignored("comment from a bot")
        line = find_command_line(str(comment.get("body") or ""))
        if line is None:
            return Ignored("no /pr-check command")
        if repo is None or not isinstance(issue.get("number"), int) or not isinstance(comment.get("id"), int):
            return Ignored("issue_comment without repository, number or comment id")
        return CommandCommented(repo, issue["number"], comment["id"], line,
                                str((comment.get("user") or {}).get("login") or ""),
                                str(comment.get("author_association") or "NONE"))
    if event == "check_run" and action == "rerequested":
        run = payload.get("check_run") or {}
        numbers = [p.get("number") for p in run.get("pull_requests") or () if isinstance(p.get("number"), int)]
        if repo is None or not numbers or run.get("name") != "pr-check":
            return Ignored("check_run rerequest that is not for a pr-check run on a pull request")
        return ReviewRequested(repo, numbers[0], _login(payload.get("sender")))
    if event == "check_suite" and action == "rerequested":
        suite = payload.get("check_suite") or {}
        numbers = [p.get("number") for p in suite.get("pull_requests") or () if isinstance(p.get("number"), int)]
        if repo is None or not numbers:
            return Ignored("check_suite rerequest without a pull request")
        return ReviewRequested(repo, numbers[0], _login(payload.get("sender")))
    if event == "workflow_run":
        if action not in WORKFLOW_RUN_ACTIONS:
            return Ignored(f"workflow_run action {action!r}")
        run = payload.get("workflow_run") or {}
        if repo is None or not isinstance(run.get("id"), int):
            return Ignored("workflow_run without repository or id")
        return WorkflowRunChanged(repo, run["id"], str(run.get("name") or ""), str(run.get("display_title") or ""),
                                  str(run.get("status") or ""), run.get("conclusion"), run.get("html_url"),
                                  run.get("head_sha"))
    return Ignored(f"event {event!r} action {action!r} needs no work")


def is_bot(user: object) -> bool:
    """GitHub Apps (ours included) and bot accounts: their comments are never commands."""
    if not isinstance(user, Mapping):
        return False
    return user.get("type") == "Bot" or str(user.get("login") or "").endswith("[bot]")


def job_to_json(job: Job) -> str:
    """A job as JSON, for the ledger."""
    return json.dumps({"kind": type(job).__name__, **asdict(job)}, sort_keys=True)


def job_from_json(text: str) -> Job:
    """The inverse of job_to_json."""
    data = json.loads(text)
    cls = _KINDS[data.pop("kind")]
    data["repo"] = RepoRef(**data["repo"])
    return cls(**data)


def _repo(payload: Mapping) -> RepoRef | None:
    repository = payload.get("repository") or {}
    owner = (repository.get("owner") or {}).get("login")
    name = repository.get("name")
    if not isinstance(owner, str) or not isinstance(name, str):
        full = repository.get("full_name")
        if not isinstance(full, str) or "/" not in full:
            return None
        owner, name = full.split("/", 1)
    installation = (payload.get("installation") or {}).get("id")
    return RepoRef(owner, name, installation if isinstance(installation, int) else None)


def _login(user: object) -> str:
    return str(user.get("login") or "") if isinstance(user, Mapping) else ""


def _timestamp(text: object) -> float:
    if not isinstance(text, str):
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
