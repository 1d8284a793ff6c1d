"""What the App knows of GitHub, as values: the REST API's objects it reads, the two client
protocols the workers program against, and the one error a request ends in, with its kind.

webhooks/github_api.py implements the protocols over PyGithub; webhooks/github_calls.py runs each
request with its retries and says which kind of failure ended it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from bot.errors import PrCheckError


class GitHubFailure(StrEnum):
    """Why a request failed, as the job queue branches on it (webhooks/retry.py)."""

    UNREACHABLE = "unreachable"  # no answer: a refused or dropped connection, a timeout
    SERVER = "server"  # 5xx after the request's own retries: GitHub is having trouble
    RATE_LIMITED = "rate-limited"  # a wait longer than the App waits inside one job
    CREDENTIALS = "credentials"  # 401, or 403 to the App's own JWT: the App id or private key is wrong
    REFUSED = "refused"  # any other 4xx: this request will not succeed as it is


def failure_of(status: int | None) -> GitHubFailure:
    """The kind of failure a final HTTP status (None: no response) stands for."""
    if status is None:
        return GitHubFailure.UNREACHABLE
    if status >= 500:
        return GitHubFailure.SERVER
    if status == 401:
        return GitHubFailure.CREDENTIALS
    return GitHubFailure.REFUSED


CREDENTIALS_HINT = (
    "check the App id (PR_CHECK_APP_ID) and private key (PR_CHECK_PRIVATE_KEY_FILE): "
    "they must be the App's own, from its settings page"
)


class GitHubError(PrCheckError):
    """A GitHub request failed for good (after the retries it deserved)."""

    exit_code = 3

    def __init__(self, operation: str, status: int | None, message: str, kind: GitHubFailure | None = None) -> None:
        self.kind = kind or failure_of(status)
        hint = f"; {CREDENTIALS_HINT}" if self.kind is GitHubFailure.CREDENTIALS else ""
        super().__init__(f"GitHub {operation}: {status or 'no response'} {message}".strip() + hint)
        self.operation = operation
        self.status = status
        self.message = message


# -- values ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PullRequest:
    number: int
    state: str
    draft: bool
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    author: str
    clone_url: str  # of the base repository, which holds refs/pull/N/head
    default_branch: str
    head_repo: str = ""  # owner/name of the head repository; "" when the fork was deleted
    head_is_fork: bool = False  # the head branch lives in another repository than the base
    maintainer_can_modify: bool = False  # a fork's author allows pushes from maintainers (and this App)


@dataclass(frozen=True, slots=True)
class FileUpdate:
    """A file of a commit pushed through the Git Data API: its path, git mode and new text."""

    path: str
    mode: str  # 100644 | 100755
    text: str


class BranchMoved(GitHubError):
    """The branch no longer points at the commit a push was built on (GitHub: not a fast forward)."""


@dataclass(frozen=True, slots=True)
class ReviewComment:
    id: int
    path: str
    line: int | None
    start_line: int | None
    body: str
    author: str
    author_is_bot: bool
    in_reply_to: int | None
    commit_id: str
    html_url: str = ""


@dataclass(frozen=True, slots=True)
class Review:
    id: int
    author: str
    author_is_bot: bool
    state: str
    body: str
    commit_id: str | None


@dataclass(frozen=True, slots=True)
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    external_id: str
    app_id: int | None


@dataclass(frozen=True, slots=True)
class WorkflowRun:
    id: int
    status: str
    conclusion: str | None
    html_url: str | None
    name: str
    display_title: str


@dataclass(frozen=True, slots=True)
class HookDelivery:
    id: int
    guid: str
    status_code: int
    delivered_at: float
    redelivery: bool
    event: str
    action: str | None

    @property
    def succeeded(self) -> bool:
        return 200 <= self.status_code < 300


# -- protocols -------------------------------------------------------------------------------
class RepositoryClient(Protocol):
    """One repository, as one App installation sees it."""

    def pull(self, number: int) -> PullRequest: ...
    def pull_diff(self, number: int) -> str: ...
    def review_comments(self, number: int) -> list[ReviewComment]: ...
    def reviews(self, number: int) -> list[Review]: ...
    def create_review(self, number: int, *, commit_id: str, event: str, body: str, comments: Sequence[dict]) -> int: ...
    def edit_review_comment(self, comment_id: int, body: str) -> None: ...
    def delete_review_comment(self, comment_id: int) -> None: ...
    def reply_to_review_comment(self, number: int, comment_id: int, body: str) -> int: ...
    def dismiss_review(self, number: int, review_id: int, message: str) -> None: ...
    def create_issue_comment(self, number: int, body: str) -> int: ...
    def add_reaction(self, comment_id: int, content: str) -> None: ...
    def collaborator_permission(self, login: str) -> str: ...
    def check_runs(self, head_sha: str, name: str) -> list[CheckRun]: ...
    def create_check_run(self, name: str, head_sha: str, **fields: Any) -> CheckRun: ...
    def update_check_run(self, check_run_id: int, **fields: Any) -> None: ...
    def dispatch_workflow(self, workflow_file: str, ref: str, inputs: Mapping[str, str]) -> int | None: ...
    def workflow_id(self, workflow_file: str) -> int: ...
    def commit_sha(self, ref: str) -> str: ...
    def push_commit(self, branch: str, parent_sha: str, files: Sequence[FileUpdate], message: str) -> str: ...


class AppClient(Protocol):
    """The App itself: installation access, and its webhook deliveries."""

    app_id: str

    def repository(self, installation_id: int | None, owner: str, name: str) -> RepositoryClient: ...
    def installation_token(self, installation_id: int) -> str: ...
    def installation_id(self, owner: str, name: str) -> int: ...
    def hook_deliveries(self, since: float) -> list[HookDelivery]: ...
    def redeliver(self, delivery_id: int) -> None: ...
