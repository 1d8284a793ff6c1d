"""What the stand-in remembers: one mutable record per GitHub object, guarded by the stand-in's lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .diffs import FilePatch


@dataclass
class Repo:
    owner: str
    name: str
    id: int
    installation_id: int | None  # None: the App is not installed there (a contributor's fork)
    bare_git_path: str | None
    permissions: dict[str, str]  # login -> admin | maintain | write | triage | read | none
    default_branch: str
    private: bool
    fork: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class PullHead:
    """One head a pull request had; the diff is the one GitHub showed while this head was current."""

    sha: str
    base_sha: str
    diff_text: str
    files: tuple[FilePatch, ...]


@dataclass
class Pull:
    repo: Repo
    number: int
    id: int
    head_ref: str
    base_ref: str
    author: str
    author_association: str
    head_repo: Repo
    draft: bool
    title: str
    body: str
    state: str
    binary_paths: frozenset[str]
    heads: list[PullHead]  # oldest first; the last one is current
    created_at: str
    updated_at: str
    maintainer_can_modify: bool = False  # a fork's author allows maintainers to push to the head branch

    @property
    def head(self) -> PullHead:
        return self.heads[-1]


@dataclass
class Review:
    id: int
    pull: Pull
    user: str
    body: str
    state: str  # PENDING | COMMENTED | CHANGES_REQUESTED | APPROVED | DISMISSED
    commit_id: str
    submitted_at: str | None


@dataclass
class ReviewComment:
    id: int
    review_id: int
    pull: Pull
    user: str
    body: str
    path: str
    side: str | None
    line: int | None
    start_line: int | None
    start_side: str | None
    original_line: int | None
    original_start_line: int | None
    position: int | None
    original_position: int | None
    diff_hunk: str
    commit_id: str
    original_commit_id: str
    subject_type: str  # line | file
    in_reply_to_id: int | None
    created_at: str
    updated_at: str
    deleted: bool = False


@dataclass
class IssueComment:
    id: int
    repo: Repo
    number: int
    user: str
    user_type: str  # User | Bot
    author_association: str
    body: str
    created_at: str
    updated_at: str
    deleted: bool = False


@dataclass
class Reaction:
    id: int
    comment_id: int
    user: str
    user_type: str
    content: str
    created_at: str


@dataclass
class CheckRun:
    id: int
    repo: Repo
    suite_id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    started_at: str | None
    completed_at: str | None
    details_url: str | None
    external_id: str | None
    title: str | None
    summary: str | None
    text: str | None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 1  # create + each PATCH


@dataclass
class Workflow:
    id: int
    repo: Repo
    file: str
    name: str
    inputs: dict[str, bool] | None  # declared input -> required; None accepts any inputs
    state: str
    created_at: str


@dataclass
class WorkflowRun:
    id: int
    run_number: int
    workflow: Workflow
    ref: str
    head_sha: str
    inputs: dict[str, Any]
    status: str
    conclusion: str | None
    actor: str
    created_at: str
    updated_at: str
    check_suite_id: int


@dataclass
class Delivery:
    id: int
    guid: str
    event: str
    action: str | None
    status_code: int
    redelivery: bool
    installation_id: int | None
    repository_id: int | None
    delivered_at: str
