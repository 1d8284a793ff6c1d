"""An in-process fake of GitHub for the App's unit tests: the RepositoryClient and AppClient protocols
over plain in-memory state, recording every call.

It answers as GitHub does where the App depends on it (an unknown pull or check run is a 404, an
unknown collaborator has permission "none", a deleted comment stays deleted), and nothing more. The
HTTP stand-in (tests/standin) remains the contract test of webhooks/github_api.py; this one lets a test drive
the App's logic and then read, in order, what it asked of GitHub.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from webhooks.github_api import (
    BranchMoved,
    CheckRun,
    FileUpdate,
    GitHubError,
    HookDelivery,
    PullRequest,
    Review,
    ReviewComment,
)

BOT_LOGIN = "pr-check[bot]"
_REVIEW_STATES = {"REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "APPROVE": "APPROVED"}


@dataclass(frozen=True, slots=True)
class Call:
    """One request the App made: which client method, on which repository ("" for the App), with what."""

    method: str
    arguments: Mapping[str, Any]
    repository: str = ""


@dataclass(frozen=True, slots=True)
class IssueComment:
    id: int
    number: int
    body: str
    author: str


@dataclass
class _Shared:
    calls: list[Call] = field(default_factory=list)
    ids: Any = field(default_factory=lambda: itertools.count(1001))  # GitHub's ids: unique, increasing


def _not_found(operation: str) -> GitHubError:
    return GitHubError(operation, 404, "Not Found")


class RecordingRepository:
    """One repository's state; RepositoryClient. Tests fill the public dicts and read them back."""

    def __init__(self, owner: str, name: str, installation_id: int, app_id: str, shared: _Shared) -> None:
        self.owner, self.name, self.installation_id = owner, name, installation_id
        self._app_id = app_id
        self._shared = shared
        self.pulls: dict[int, PullRequest] = {}
        self.diffs: dict[int, str] = {}
        self.permissions: dict[str, str] = {}  # login -> admin | maintain | write | triage | read
        self.review_comment_list: dict[int, list[ReviewComment]] = {}  # pull number -> its review comments
        self.review_list: dict[int, list[Review]] = {}
        self.issue_comments: list[IssueComment] = []
        self.reactions: list[tuple[int, str]] = []
        self.check_run_list: list[CheckRun] = []
        self.check_run_fields: dict[int, dict[str, Any]] = {}  # every field sent, the last value of each
        self.workflows: dict[str, int] = {}  # workflow file -> id
        self.refs: dict[str, str] = {}  # branch -> sha
        self.dispatches: list[tuple[str, str, dict[str, str]]] = []

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def _record(self, method: str, **arguments: Any) -> None:
        self._shared.calls.append(Call(method, arguments, self.full_name))

    def _next_id(self) -> int:
        return next(self._shared.ids)

    def add_pull(self, pull: PullRequest, diff: str = "") -> PullRequest:
        """Open a pull request (test setup; not recorded)."""
        self.pulls[pull.number] = pull
        self.diffs[pull.number] = diff
        return pull

    def add_review_comment(
        self, number: int, *, path: str, line: int | None, body: str, author: str, in_reply_to: int | None = None
    ) -> ReviewComment:
        """A comment already on the pull request, by the bot or by a person (test setup; not recorded)."""
        comment = ReviewComment(
            self._next_id(),
            path,
            line,
            None,
            body,
            author,
            author.endswith("[bot]"),
            in_reply_to,
            self.pulls[number].head_sha if number in self.pulls else "",
        )
        self.review_comment_list.setdefault(number, []).append(comment)
        return comment

    # pull requests
    def pull(self, number: int) -> PullRequest:
        self._record("pull", number=number)
        if number not in self.pulls:
            raise _not_found("get pull request")
        return self.pulls[number]

    def pull_diff(self, number: int) -> str:
        self._record("pull_diff", number=number)
        if number not in self.pulls:
            raise _not_found("get pull request diff")
        return self.diffs.get(number, "")

    def review_comments(self, number: int) -> list[ReviewComment]:
        self._record("review_comments", number=number)
        return list(self.review_comment_list.get(number, ()))

    def reviews(self, number: int) -> list[Review]:
        self._record("reviews", number=number)
        return list(self.review_list.get(number, ()))

    def create_review(self, number: int, *, commit_id: str, event: str, body: str, comments: Sequence[dict]) -> int:
        self._record(
            "create_review",
            number=number,
            commit_id=commit_id,
            event=event,
            body=body,
            comments=[dict(item) for item in comments],
        )
        if number not in self.pulls:
            raise _not_found("create review")
        review = Review(self._next_id(), BOT_LOGIN, True, _REVIEW_STATES.get(event, event), body, commit_id)
        self.review_list.setdefault(number, []).append(review)
        for item in comments:
            self.review_comment_list.setdefault(number, []).append(
                ReviewComment(
                    self._next_id(),
                    item["path"],
                    item["line"],
                    item.get("start_line"),
                    item["body"],
                    BOT_LOGIN,
                    True,
                    None,
                    commit_id,
                )
            )
        return review.id

    def _find_comment(self, comment_id: int) -> tuple[int, int] | None:
        for number, comments in self.review_comment_list.items():
            for index, comment in enumerate(comments):
                if comment.id == comment_id:
                    return number, index
        return None

    def edit_review_comment(self, comment_id: int, body: str) -> None:
        self._record("edit_review_comment", comment_id=comment_id, body=body)
        where = self._find_comment(comment_id)
        if where is None:
            raise _not_found("edit review comment")
        comments = self.review_comment_list[where[0]]
        comments[where[1]] = replace(comments[where[1]], body=body)

    def delete_review_comment(self, comment_id: int) -> None:
        self._record("delete_review_comment", comment_id=comment_id)
        where = self._find_comment(comment_id)
        if where is not None:  # already gone is what the caller wanted (webhooks/github_api.py says so too)
            del self.review_comment_list[where[0]][where[1]]

    def reply_to_review_comment(self, number: int, comment_id: int, body: str) -> int:
        self._record("reply_to_review_comment", number=number, comment_id=comment_id, body=body)
        where = self._find_comment(comment_id)
        if where is None or where[0] != number:
            raise _not_found("reply to review comment")
        parent = self.review_comment_list[number][where[1]]
        reply = ReviewComment(
            self._next_id(), parent.path, parent.line, None, body, BOT_LOGIN, True, comment_id, parent.commit_id
        )
        self.review_comment_list[number].append(reply)
        return reply.id

    def dismiss_review(self, number: int, review_id: int, message: str) -> None:
        self._record("dismiss_review", number=number, review_id=review_id, message=message)
        reviews = self.review_list.get(number, [])
        for index, review in enumerate(reviews):
            if review.id == review_id:
                reviews[index] = replace(review, state="DISMISSED")
                return
        raise _not_found("dismiss review")

    # conversation
    def create_issue_comment(self, number: int, body: str) -> int:
        self._record("create_issue_comment", number=number, body=body)
        comment = IssueComment(self._next_id(), number, body, BOT_LOGIN)
        self.issue_comments.append(comment)
        return comment.id

    def add_reaction(self, comment_id: int, content: str) -> None:
        self._record("add_reaction", comment_id=comment_id, content=content)
        if (comment_id, content) not in self.reactions:  # GitHub answers 200 to a repeat and keeps one
            self.reactions.append((comment_id, content))

    def collaborator_permission(self, login: str) -> str:
        self._record("collaborator_permission", login=login)
        return self.permissions.get(login, "none")

    # checks
    def check_runs(self, head_sha: str, name: str) -> list[CheckRun]:
        self._record("check_runs", head_sha=head_sha, name=name)
        return [run for run in self.check_run_list if run.head_sha == head_sha and run.name == name]

    def create_check_run(self, name: str, head_sha: str, **fields: Any) -> CheckRun:
        self._record("create_check_run", name=name, head_sha=head_sha, **fields)
        run = CheckRun(
            self._next_id(),
            name,
            head_sha,
            str(fields.get("status") or "queued"),
            fields.get("conclusion"),
            str(fields.get("external_id") or ""),
            int(self._app_id),
        )
        self.check_run_list.append(run)
        self.check_run_fields[run.id] = dict(fields)
        return run

    def update_check_run(self, check_run_id: int, **fields: Any) -> None:
        self._record("update_check_run", check_run_id=check_run_id, **fields)
        for index, run in enumerate(self.check_run_list):
            if run.id == check_run_id:
                self.check_run_list[index] = replace(
                    run, status=fields.get("status", run.status), conclusion=fields.get("conclusion", run.conclusion)
                )
                self.check_run_fields[run.id].update(fields)
                return
        raise _not_found("update check run")

    # actions
    def dispatch_workflow(self, workflow_file: str, ref: str, inputs: Mapping[str, str]) -> int | None:
        self._record("dispatch_workflow", workflow_file=workflow_file, ref=ref, inputs=dict(inputs))
        if workflow_file not in self.workflows:
            raise _not_found("dispatch workflow")
        self.dispatches.append((workflow_file, ref, dict(inputs)))
        return self._next_id()

    def workflow_id(self, workflow_file: str) -> int:
        self._record("workflow_id", workflow_file=workflow_file)
        if workflow_file not in self.workflows:
            raise _not_found("get workflow")
        return self.workflows[workflow_file]

    def commit_sha(self, ref: str) -> str:
        self._record("commit_sha", ref=ref)
        if ref not in self.refs:
            raise _not_found("get commit")
        return self.refs[ref]

    def push_commit(self, branch: str, parent_sha: str, files: Sequence[FileUpdate], message: str) -> str:
        self._record("push_commit", branch=branch, parent_sha=parent_sha, files=tuple(files), message=message)
        if self.refs.get(branch, parent_sha) != parent_sha:
            raise BranchMoved("update branch", 422, "Update is not a fast forward")
        sha = f"{self._next_id():040x}"
        self.refs[branch] = sha
        return sha


class RecordingApp:
    """The App's view of GitHub; AppClient. `calls` lists every call, the repositories' included, in order."""

    def __init__(self, app_id: str = "4242") -> None:
        self.app_id = app_id
        self._shared = _Shared()
        self._repositories: dict[tuple[str, str], RecordingRepository] = {}
        self.deliveries: list[HookDelivery] = []
        self.redelivered: list[int] = []

    @property
    def calls(self) -> list[Call]:
        return self._shared.calls

    def calls_to(self, method: str) -> list[Mapping[str, Any]]:
        """The arguments of every call to `method`, in order."""
        return [call.arguments for call in self.calls if call.method == method]

    def add_repository(self, owner: str, name: str, installation_id: int = 1) -> RecordingRepository:
        """Install the App on a repository (test setup; not recorded)."""
        repository = RecordingRepository(owner, name, installation_id, self.app_id, self._shared)
        self._repositories[(owner.lower(), name.lower())] = repository
        return repository

    def _record(self, method: str, **arguments: Any) -> None:
        self._shared.calls.append(Call(method, arguments))

    def repository(self, installation_id: int | None, owner: str, name: str) -> RecordingRepository:
        self._record("repository", installation_id=installation_id, owner=owner, name=name)
        found = self._repositories.get((owner.lower(), name.lower()))
        if found is None or (installation_id is not None and installation_id != found.installation_id):
            raise _not_found("create installation token")
        return found

    def installation_token(self, installation_id: int) -> str:
        self._record("installation_token", installation_id=installation_id)
        return f"recorded-token-{installation_id}"

    def installation_id(self, owner: str, name: str) -> int:
        self._record("installation_id", owner=owner, name=name)
        found = self._repositories.get((owner.lower(), name.lower()))
        if found is None:
            raise _not_found("get repository installation")
        return found.installation_id

    def hook_deliveries(self, since: float) -> list[HookDelivery]:
        self._record("hook_deliveries", since=since)
        return sorted((d for d in self.deliveries if d.delivered_at >= since), key=lambda d: -d.delivered_at)

    def redeliver(self, delivery_id: int) -> None:
        self._record("redeliver", delivery_id=delivery_id)
        self.redelivered.append(delivery_id)
