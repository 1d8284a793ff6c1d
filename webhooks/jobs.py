"""Webhook deliveries -> jobs: the few facts each job needs, as frozen values. Pure.

Only what the payload says is trusted here for routing (owner, repository, number, installation);
everything the review depends on is read again from the GitHub API when the job runs, and payload
URLs are never followed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime

from bot.render.check_run import pull_number_from_external_id
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
    created_at: float = 0.0  # the comment's, by GitHub's clock: a smoke approval covers the head of then


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
    workflow_id: int | None = None
    event: str = ""  # what triggered the run: only `workflow_dispatch` runs can be ours
    head_branch: str | None = None


Job = PullRequestPushed | ReviewRequested | CommandCommented | WorkflowRunChanged
_KINDS: dict[str, type] = {
    cls.__name__: cls for cls in (PullRequestPushed, ReviewRequested, CommandCommented, WorkflowRunChanged)
}


@dataclass(frozen=True, slots=True)
class Ignored:
    """A delivery that needs no work, and why."""

    reason: str


def pull_request_key(repo: RepoRef, number: int) -> str:
    """The name jobs of one pull request share (their lock, their latest push)."""
    return f"{repo.owner}/{repo.name}#{number}".lower()


def job_from_delivery(event: str, payload: Mapping) -> Job | Ignored:
    """What work a delivery asks for. Any JSON object is accepted: a field of the wrong type is absent."""
    if not isinstance(payload, Mapping):
        return Ignored("payload is not an object")
    action = _text(payload.get("action")) or None
    route = _ROUTES.get(event)
    routed = route(action, _repo(payload), payload) if route is not None else None
    return routed if routed is not None else Ignored(f"event {_short(event)} action {_short(action)} needs no work")


# One function an event: (action, repository or None, payload) -> the job, why it is ignored, or
# None for "this event and action need no work".
_Route = Callable[[str | None, RepoRef | None, Mapping], "Job | Ignored | None"]


def _pull_request(action: str | None, repo: RepoRef | None, payload: Mapping) -> Job | Ignored:
    if action not in PULL_REQUEST_ACTIONS:
        return Ignored(f"pull_request action {_short(action)}")
    pull = _object(payload.get("pull_request"))
    number = pull.get("number", payload.get("number"))
    if repo is None or not _is_int(number):
        return Ignored("pull_request without repository or number")
    if pull.get("draft") is True:
        return Ignored("draft pull request")
    head = _object(pull.get("head")).get("sha")
    if not isinstance(head, str) or not head:
        return Ignored("pull_request without head sha")
    return PullRequestPushed(repo, number, head, _timestamp(pull.get("updated_at")), str(action))


def _issue_comment(action: str | None, repo: RepoRef | None, payload: Mapping) -> Job | Ignored:
    if action != "created":
        return Ignored(f"issue_comment action {_short(action)}")
    issue = _object(payload.get("issue"))
    comment = _object(payload.get("comment"))
    if not issue.get("pull_request"):
        return Ignored("comment on an issue, not a pull request")
    if is_bot(payload.get("sender")) or is_bot(comment.get("user")):
        return Ignored("comment from a bot")
    body = comment.get("body")
    line = find_command_line(body if isinstance(body, str) else "")
    if line is None:
        return Ignored("no /pr-check command")
    if repo is None or not _is_int(issue.get("number")) or not _is_int(comment.get("id")):
        return Ignored("issue_comment without repository, number or comment id")
    return CommandCommented(
        repo,
        issue["number"],
        comment["id"],
        line,
        _login(comment.get("user")),
        _text(comment.get("author_association")) or "NONE",
        _timestamp(comment.get("created_at")),
    )


def _check_run(action: str | None, repo: RepoRef | None, payload: Mapping) -> Job | Ignored | None:
    if action != "rerequested":
        return None
    run = _object(payload.get("check_run"))
    numbers = _pull_numbers(run.get("pull_requests"))
    if not numbers:
        # A fork's check run comes with no pull request: ours names it in its external id.
        number = pull_number_from_external_id(run.get("external_id"))
        numbers = [number] if number is not None else []
    if repo is None or not numbers or run.get("name") != "pr-check":
        return Ignored("check_run rerequest that is not for a pr-check run on a pull request")
    return ReviewRequested(repo, numbers[0], _login(payload.get("sender")))


def _check_suite(action: str | None, repo: RepoRef | None, payload: Mapping) -> Job | Ignored | None:
    if action != "rerequested":
        return None
    numbers = _pull_numbers(_object(payload.get("check_suite")).get("pull_requests"))
    if repo is None or not numbers:
        return Ignored("check_suite rerequest without a pull request")
    return ReviewRequested(repo, numbers[0], _login(payload.get("sender")))


def _workflow_run(action: str | None, repo: RepoRef | None, payload: Mapping) -> Job | Ignored:
    if action not in WORKFLOW_RUN_ACTIONS:
        return Ignored(f"workflow_run action {_short(action)}")
    run = _object(payload.get("workflow_run"))
    if repo is None or not _is_int(run.get("id")):
        return Ignored("workflow_run without repository or id")
    conclusion = run.get("conclusion")
    return WorkflowRunChanged(
        repo,
        run["id"],
        _text(run.get("name")),
        _text(run.get("display_title")),
        _text(run.get("status")),
        conclusion if isinstance(conclusion, str) else None,
        _text(run.get("html_url")) or None,
        _text(run.get("head_sha")) or None,
        run["workflow_id"] if _is_int(run.get("workflow_id")) else None,
        _text(run.get("event")),
        _text(run.get("head_branch")) or None,
    )


_ROUTES: dict[str, _Route] = {
    "pull_request": _pull_request,
    "issue_comment": _issue_comment,
    "check_run": _check_run,
    "check_suite": _check_suite,
    "workflow_run": _workflow_run,
}


def is_bot(user: object) -> bool:
    """GitHub Apps (ours included) and bot accounts: their comments are never commands."""
    if not isinstance(user, Mapping):
        return False
    return user.get("type") == "Bot" or _text(user.get("login")).endswith("[bot]")


def job_to_json(job: Job) -> str:
    """A job as JSON, for the ledger."""
    return json.dumps({"kind": type(job).__name__, **asdict(job)}, sort_keys=True)


def job_from_json(text: str) -> Job:
    """The inverse of job_to_json."""
    data = json.loads(text)
    cls = _KINDS[data.pop("kind")]
    data["repo"] = RepoRef(**data["repo"])
    return cls(**data)


def _object(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _short(value: object) -> str:
    """A payload value quoted in a reason, never long (reasons are logged and answered)."""
    return repr(value if isinstance(value, (str, int, type(None))) else type(value).__name__)[:60]


def _pull_numbers(pulls: object) -> list[int]:
    if not isinstance(pulls, list):
        return []
    return [p["number"] for p in pulls if isinstance(p, Mapping) and _is_int(p.get("number"))]


_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def _repo(payload: Mapping) -> RepoRef | None:
    repository = _object(payload.get("repository"))
    owner = _object(repository.get("owner")).get("login")
    name = repository.get("name")
    if not isinstance(owner, str) or not isinstance(name, str):
        full = repository.get("full_name")
        if not isinstance(full, str) or "/" not in full:
            return None
        owner, name = full.split("/", 1)
    if not _NAME.match(owner) or not _NAME.match(name):
        return None  # GitHub's names are plain; anything else is not a repository we can act on
    installation = _object(payload.get("installation")).get("id")
    return RepoRef(owner, name, installation if _is_int(installation) else None)


def _login(user: object) -> str:
    return _text(user.get("login")) if isinstance(user, Mapping) else ""


def _timestamp(text: object) -> float:
    if not isinstance(text, str):
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return 0.0
