"""The GitHub client: what the App needs from the REST API, behind two small protocols.

PyGithub does the transport: App authentication (RS256 JWT), the installation-token header, the
pause between writes and the check that every URL it follows belongs to the configured API host.
On top of it this module adds what an unattended service needs: installation tokens cached until
shortly before they expire, and every request run through webhooks/github_calls.py (retries, waits
for rate limits, the kind of failure that ended it). Requests are built from paths relative to the configured
base URL; URLs found in webhook payloads are never passed in.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from github import Auth, Github, GithubIntegration

from bot.render.printable import printable
from webhooks.github_calls import CallObserver, RetryPolicy, _Caller
from webhooks.github_values import (
    AppClient,
    BranchMoved,
    CheckRun,
    FileUpdate,
    GitHubError,
    GitHubFailure,
    HookDelivery,
    PullRequest,
    RepositoryClient,
    Review,
    ReviewComment,
    WorkflowRun,
)

# The values and protocols live in github_values.py, the retries in github_calls.py; the App's
# modules import all of them from here, the client's one public face.
__all__ = [
    "AppClient",
    "BranchMoved",
    "CallObserver",
    "CheckRun",
    "FileUpdate",
    "GitHubApp",
    "GitHubError",
    "GitHubFailure",
    "GitHubRepository",
    "HookDelivery",
    "PullRequest",
    "RepositoryClient",
    "RetryPolicy",
    "Review",
    "ReviewComment",
    "WorkflowRun",
    "utc_now",
]

log = logging.getLogger("pr_check.github")

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
TOKEN_REFRESH_MARGIN_S = 300.0  # a token is renewed this long before GitHub says it expires
MAX_PAGES = 30  # 3,000 items at 100 per page: GitHub's own cap on a PR's files


_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')


# -- the implementation ----------------------------------------------------------------------
class GitHubApp:
    """The App client over PyGithub: JWT for App endpoints, cached installation tokens for the rest."""

    def __init__(
        self,
        app_id: str,
        private_key_pem: str,
        base_url: str,
        *,
        write_pause_s: float = 1.0,
        timeout_s: int = 15,
        retry: RetryPolicy | None = None,
        observe: CallObserver | None = None,
    ) -> None:
        self.app_id = str(app_id)
        self.base_url = base_url.rstrip("/")
        self._write_pause_s = write_pause_s
        self._timeout_s = timeout_s
        self._call = _Caller(retry or RetryPolicy(), observe)
        self._integration = GithubIntegration(
            auth=Auth.AppAuth(self.app_id, private_key_pem),
            base_url=self.base_url,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            timeout=timeout_s,
            per_page=100,
            lazy=True,
        )
        self._lock = threading.Lock()
        self._features: dict[str, bool] = {}
        self._tokens: dict[int, tuple[str, float, Github]] = {}  # id -> (token, expires, client)

    def _client(self, installation_id: int) -> tuple[str, Github]:
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and cached[1] - time.time() > TOKEN_REFRESH_MARGIN_S:
                return cached[0], cached[2]
        try:
            grant = self._call("create installation token", lambda: self._integration.get_access_token(installation_id))
        except GitHubError as error:
            if error.status == 403 and error.kind is GitHubFailure.REFUSED:
                # Signed with the App's JWT: a refusal here is about the App's credentials, never a PR.
                raise GitHubError(error.operation, 403, error.message, GitHubFailure.CREDENTIALS) from None
            raise
        expires = grant.expires_at
        expires_at = expires.replace(tzinfo=expires.tzinfo or UTC).timestamp() if expires else time.time() + 3600
        client = Github(
            auth=Auth.Token(grant.token),
            base_url=self.base_url,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=self._write_pause_s or None,
            timeout=self._timeout_s,
            per_page=100,
            lazy=True,
        )
        with self._lock:
            old = self._tokens.get(installation_id)
            self._tokens[installation_id] = (grant.token, expires_at, client)
        if old is not None:
            old[2].close()
        return grant.token, client

    def installation_token(self, installation_id: int) -> str:
        """A token for git over HTTPS; never log it."""
        return self._client(installation_id)[0]

    def installation_id(self, owner: str, name: str) -> int:
        _, data = self._call(
            "get repository installation",
            lambda: self._integration.requester.requestJsonAndCheck(
                "GET", f"/repos/{quote(owner)}/{quote(name)}/installation"
            ),
        )
        return int(data["id"])

    def repository(self, installation_id: int | None, owner: str, name: str) -> GitHubRepository:
        if installation_id is None:
            installation_id = self.installation_id(owner, name)
        _, client = self._client(installation_id)
        return GitHubRepository(client.requester, owner, name, self._call, self._features)

    def hook_deliveries(self, since: float) -> list[HookDelivery]:
        """The App's webhook deliveries, newest first, back to `since` (epoch seconds)."""
        requester = self._integration.requester
        found: list[HookDelivery] = []
        url: str | None = "/app/hook/deliveries"
        parameters: dict[str, Any] | None = {"per_page": 100}
        for _ in range(MAX_PAGES):
            headers, data = self._call(
                "list hook deliveries",
                lambda u=url, p=parameters: requester.requestJsonAndCheck("GET", u, parameters=p),
            )
            recent_on_page = 0
            for item in data or ():
                delivered = _epoch(item.get("delivered_at"))
                if delivered < since:
                    continue
                recent_on_page += 1
                found.append(
                    HookDelivery(
                        int(item["id"]),
                        str(item.get("guid") or ""),
                        int(item.get("status_code") or 0),
                        delivered,
                        bool(item.get("redelivery")),
                        str(item.get("event") or ""),
                        item.get("action"),
                    )
                )
            url = _next(headers)
            parameters = None
            if url is None or not recent_on_page:  # newest first: a page all older ends the search
                break
        return found

    def redeliver(self, delivery_id: int) -> None:
        requester = self._integration.requester
        self._call(
            "redeliver hook delivery",
            lambda: requester.requestJsonAndCheck("POST", f"/app/hook/deliveries/{int(delivery_id)}/attempts"),
            idempotent=False,
        )

    def close(self) -> None:
        with self._lock:
            for _, _, client in self._tokens.values():
                client.close()
            self._tokens.clear()


class GitHubRepository:
    """RepositoryClient over one installation's PyGithub requester."""

    def __init__(
        self, requester, owner: str, name: str, call: _Caller, features: dict[str, bool] | None = None
    ) -> None:
        self._requester = requester
        self._call = call
        self._features = features if features is not None else {}  # what the server turned out to lack
        self.owner = owner
        self.name = name
        self._base = f"/repos/{quote(owner)}/{quote(name)}"

    def _request(self, operation: str, verb: str, path: str, *, idempotent: bool | None = None, **kwargs) -> Any:
        idempotent = verb in ("GET", "PUT", "DELETE", "PATCH") if idempotent is None else idempotent
        if "input" in kwargs:  # GitHub takes UTF-8: a file name that is not is sent escaped
            kwargs["input"] = printable(kwargs["input"])
        _, data = self._call(
            operation,
            lambda: self._requester.requestJsonAndCheck(verb, self._base + path, **kwargs),
            idempotent=idempotent,
        )
        return data

    def _pages(
        self, operation: str, path: str, parameters: Mapping[str, Any] | None = None, wrap: str | None = None
    ) -> Iterator[dict]:
        url: str | None = self._base + path
        params: dict[str, Any] | None = {"per_page": 100, **(parameters or {})}
        for _ in range(MAX_PAGES):
            headers, data = self._call(
                operation, lambda u=url, p=params: self._requester.requestJsonAndCheck("GET", u, parameters=p)
            )
            yield from (data.get(wrap) or ()) if wrap else (data or ())
            url = _next(headers)
            params = None
            if url is None:
                return

    # pull requests
    def pull(self, number: int) -> PullRequest:
        data = self._request("get pull request", "GET", f"/pulls/{int(number)}")
        base_repo = data["base"].get("repo") or {}
        head_repo = data["head"].get("repo") or {}  # null once a fork is deleted
        return PullRequest(
            number=int(data["number"]),
            state=str(data.get("state") or "open"),
            draft=bool(data.get("draft")),
            head_sha=data["head"]["sha"],
            head_ref=str(data["head"].get("ref") or ""),
            base_sha=data["base"]["sha"],
            base_ref=str(data["base"].get("ref") or ""),
            author=str((data.get("user") or {}).get("login") or ""),
            clone_url=str(base_repo.get("clone_url") or ""),
            default_branch=str(base_repo.get("default_branch") or "main"),
            head_repo=str(head_repo.get("full_name") or ""),
            head_is_fork=bool(head_repo) and head_repo.get("id") != base_repo.get("id"),
            maintainer_can_modify=bool(data.get("maintainer_can_modify")),
        )

    def pull_diff(self, number: int) -> str:
        """The unified diff GitHub shows; past GitHub's size limits, rebuilt from the files endpoint."""
        try:
            data = self._request(
                "get pull request diff", "GET", f"/pulls/{int(number)}", headers={"Accept": DIFF_MEDIA_TYPE}
            )
            return str(data.get("data", "")) if isinstance(data, dict) else str(data)
        except GitHubError as error:
            if error.status != 406:
                raise
        sections = []
        for item in self._pages("list pull request files", f"/pulls/{int(number)}/files"):
            new = item["filename"]
            old = item.get("previous_filename") or new
            status = item.get("status")
            header = [f"diff --git a/{old} b/{new}"]
            # git's own extended headers: without them a parser cannot tell a deletion from an edit
            if status == "added":
                header.append("new file mode 100644")
            elif status == "removed":
                header.append("deleted file mode 100644")
            header.append("--- /dev/null" if status == "added" else f"--- a/{old}")
            header.append("+++ /dev/null" if status == "removed" else f"+++ b/{new}")
            patch = item.get("patch")
            if patch is None:
                sections.append(f"diff --git a/{old} b/{new}\nBinary files differ\n" if status != "renamed" else "")
                continue
            sections.append("\n".join(header) + "\n" + patch.rstrip("\n") + "\n")
        return "".join(sections)

    def review_comments(self, number: int) -> list[ReviewComment]:
        return [
            ReviewComment(
                id=int(item["id"]),
                path=str(item.get("path") or ""),
                line=item.get("line"),
                start_line=item.get("start_line"),
                body=str(item.get("body") or ""),
                author=str((item.get("user") or {}).get("login") or ""),
                author_is_bot=(item.get("user") or {}).get("type") == "Bot",
                in_reply_to=item.get("in_reply_to_id"),
                commit_id=str(item.get("commit_id") or ""),
                html_url=str(item.get("html_url") or ""),
            )
            for item in self._pages(
                "list review comments", f"/pulls/{int(number)}/comments", {"sort": "created", "direction": "asc"}
            )
        ]

    def reviews(self, number: int) -> list[Review]:
        return [
            Review(
                id=int(item["id"]),
                author=str((item.get("user") or {}).get("login") or ""),
                author_is_bot=(item.get("user") or {}).get("type") == "Bot",
                state=str(item.get("state") or ""),
                body=str(item.get("body") or ""),
                commit_id=item.get("commit_id"),
            )
            for item in self._pages("list reviews", f"/pulls/{int(number)}/reviews")
        ]

    def create_review(self, number: int, *, commit_id: str, event: str, body: str, comments: Sequence[dict]) -> int:
        # Not retried on 5xx: the review may exist; the caller looks for its marker before posting again.
        data = self._request(
            "create review",
            "POST",
            f"/pulls/{int(number)}/reviews",
            input={"commit_id": commit_id, "event": event, "body": body, "comments": list(comments)},
        )
        return int(data["id"])

    def edit_review_comment(self, comment_id: int, body: str) -> None:
        self._request("edit review comment", "PATCH", f"/pulls/comments/{int(comment_id)}", input={"body": body})

    def delete_review_comment(self, comment_id: int) -> None:
        try:
            self._request("delete review comment", "DELETE", f"/pulls/comments/{int(comment_id)}")
        except GitHubError as error:
            if error.status != 404:  # already gone is what we wanted
                raise

    def reply_to_review_comment(self, number: int, comment_id: int, body: str) -> int:
        data = self._request(
            "reply to review comment",
            "POST",
            f"/pulls/{int(number)}/comments/{int(comment_id)}/replies",
            input={"body": body},
        )
        return int(data["id"])

    def dismiss_review(self, number: int, review_id: int, message: str) -> None:
        self._request(
            "dismiss review",
            "PUT",
            f"/pulls/{int(number)}/reviews/{int(review_id)}/dismissals",
            input={"message": message, "event": "DISMISS"},
        )

    # conversation
    def create_issue_comment(self, number: int, body: str) -> int:
        data = self._request("create issue comment", "POST", f"/issues/{int(number)}/comments", input={"body": body})
        return int(data["id"])

    def add_reaction(self, comment_id: int, content: str) -> None:
        # Posting the same reaction twice answers 200, so this is safe to repeat.
        self._request(
            "add reaction",
            "POST",
            f"/issues/comments/{int(comment_id)}/reactions",
            input={"content": content},
            idempotent=True,
        )

    def collaborator_permission(self, login: str) -> str:
        """admin | maintain | write | triage | read | none; none when GitHub will not say."""
        try:
            data = self._request("get collaborator permission", "GET", f"/collaborators/{quote(login)}/permission")
        except GitHubError as error:
            if error.status in (403, 404):
                return "none"
            raise
        return str(data.get("permission") or "none")

    # checks
    def check_runs(self, head_sha: str, name: str) -> list[CheckRun]:
        return [
            _check_run(item)
            for item in self._pages(
                "list check runs",
                f"/commits/{quote(head_sha)}/check-runs",
                {"check_name": name, "filter": "all"},
                wrap="check_runs",
            )
        ]

    def create_check_run(self, name: str, head_sha: str, **fields: Any) -> CheckRun:
        body = {"name": name, "head_sha": head_sha, **_check_fields(fields)}
        return _check_run(self._request("create check run", "POST", "/check-runs", input=body))

    def update_check_run(self, check_run_id: int, **fields: Any) -> None:
        # PATCH appends annotations, so a retried PATCH could send a batch twice; it is retried anyway,
        # because GitHub answers 5xx far more often before acting than after.
        self._request("update check run", "PATCH", f"/check-runs/{int(check_run_id)}", input=_check_fields(fields))

    # actions
    def dispatch_workflow(self, workflow_file: str, ref: str, inputs: Mapping[str, str]) -> int | None:
        """Dispatch; the run id when GitHub returns run details (2026-02 and later), else None.

        GitHub Enterprise Server versions older than run details answer 422 to `return_run_details`:
        nothing was dispatched, so the request is sent again without it, and the server is remembered.
        """
        path = f"/actions/workflows/{quote(workflow_file)}/dispatches"
        body = {"ref": ref, "inputs": dict(inputs)}
        if self._features.get("return_run_details", True):
            try:
                data = self._request("dispatch workflow", "POST", path, input={**body, "return_run_details": True})
            except GitHubError as error:
                if error.status != 422:
                    raise
                log.warning("dispatch with return_run_details refused (%s); sending it without", error.message)
                self._features["return_run_details"] = False
            else:
                if isinstance(data, Mapping) and data.get("workflow_run_id") is not None:
                    return int(data["workflow_run_id"])
                return None
        self._request("dispatch workflow", "POST", path, input=body)
        return None

    def workflow_id(self, workflow_file: str) -> int:
        """The numeric id of a workflow file, as `workflow_run` events report it."""
        data = self._request("get workflow", "GET", f"/actions/workflows/{quote(workflow_file)}")
        return int(data["id"])

    def commit_sha(self, ref: str) -> str:
        """The commit a branch (or any ref) points at now."""
        data = self._request("get commit", "GET", f"/commits/{quote(ref, safe='')}")
        return str(data["sha"])

    # git data
    def push_commit(self, branch: str, parent_sha: str, files: Sequence[FileUpdate], message: str) -> str:
        """One commit of `files` on `parent_sha`, then `branch` moved to it without force; its sha.

        No author or committer is sent, so GitHub records the App as both. BranchMoved when the
        branch is no longer at `parent_sha` (checked first, and again by GitHub's fast-forward rule).
        """
        ref = f"heads/{quote(branch, safe='/')}"
        current = self._request("get branch ref", "GET", f"/git/ref/{ref}")
        if current["object"]["sha"] != parent_sha:
            raise BranchMoved(
                "update branch", 422, f"{branch} is at {current['object']['sha'][:12]}, not {parent_sha[:12]}"
            )
        parent = self._request("get commit object", "GET", f"/git/commits/{quote(parent_sha)}")
        entries = []
        for file in files:
            blob = self._request(
                "create blob", "POST", "/git/blobs", idempotent=True, input={"content": file.text, "encoding": "utf-8"}
            )
            entries.append({"path": file.path, "mode": file.mode, "type": "blob", "sha": blob["sha"]})
        # Blobs, trees and commits are content-addressed: sending one again makes the same object.
        tree = self._request(
            "create tree",
            "POST",
            "/git/trees",
            idempotent=True,
            input={"base_tree": parent["tree"]["sha"], "tree": entries},
        )
        commit = self._request(
            "create commit",
            "POST",
            "/git/commits",
            idempotent=True,
            input={"message": message, "tree": tree["sha"], "parents": [parent_sha]},
        )
        try:
            self._request("update branch", "PATCH", f"/git/refs/{ref}", input={"sha": commit["sha"], "force": False})
        except GitHubError as error:
            if error.status == 422 and "fast forward" in error.message.lower():
                raise BranchMoved(error.operation, error.status, error.message) from None
            raise
        return str(commit["sha"])


def _check_run(data: Mapping) -> CheckRun:
    return CheckRun(
        id=int(data["id"]),
        name=str(data.get("name") or ""),
        head_sha=str(data.get("head_sha") or ""),
        status=str(data.get("status") or ""),
        conclusion=data.get("conclusion"),
        external_id=str(data.get("external_id") or ""),
        app_id=(data.get("app") or {}).get("id"),
    )


def _check_fields(fields: Mapping[str, Any]) -> dict:
    body = {}
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, datetime):
            value = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body[key] = value
    return body


def _next(headers: Mapping[str, str]) -> str | None:
    link = None
    for key, value in (headers or {}).items():
        if key.lower() == "link":
            link = value
    if not link:
        return None
    match = _NEXT_LINK.search(link)
    return match.group(1) if match else None


def _epoch(text: object) -> float:
    if not isinstance(text, str):
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def utc_now() -> datetime:
    """Now, for check-run timestamps."""
    return datetime.now(UTC)
