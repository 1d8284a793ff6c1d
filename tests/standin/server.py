"""GitHubStandIn: a local api.github.com on 127.0.0.1, for PyGithub to talk to over real HTTP.

    with GitHubStandIn(app_id, app_key_pair().public_pem) as gh:
        gh.add_repo("o", "r", bare_git_path=path, permissions={"alice": "write"})
        gh.add_pull("o", "r", 7, head, base, "feature", "main", "alice", "CONTRIBUTOR")
        Github(auth=AppAuth(app_id, private_pem).get_installation_auth(1), base_url=gh.base_url, ...)

Served by the stdlib ThreadingHTTPServer in a daemon thread. Every public method takes the state
lock, and every inspection helper returns fresh JSON-shaped copies.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

from . import gitrepos, payloads, routes, shapes
from .credentials import grants, jwt_problem
from .exchange import Abort, Call, Reply, error
from .records import Delivery, IssueComment, Pull, Repo, Workflow, WorkflowRun
from .state import DEFAULT_PERMISSIONS, State, now_iso

SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000."
)
SECONDARY_RATE_LIMIT_BODY = {
    "message": SECONDARY_RATE_LIMIT_MESSAGE,
    "documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api",
    "status": "403",
}


class Request(NamedTuple):
    """One request as the stand-in saw it; `path` lacks the query and any base path prefix."""

    method: str
    path: str
    status: int


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    remaining: int


@dataclass
class _Stall:
    method: str
    pattern: re.Pattern[str]
    accept: str
    seconds: float
    remaining: int
    held: int = 0  # matching requests caught so far (read under the state lock)


class GitHubStandIn:
    """A GitHub REST API stand-in for one App; see the module docstring."""

    def __init__(
        self,
        app_id: int,
        public_key_pem: bytes,
        *,
        app_slug: str = "pr-check",
        path_prefix: str = "",
        installation_permissions: Mapping[str, str] | None = None,
        run_details: bool = True,
    ) -> None:
        """`path_prefix` such as "/api/v3" serves the API GHES-style below that path.

        `run_details=False`: a dispatch with `return_run_details` is refused (422), as GitHub
        Enterprise Server versions from before run details (February 2026) refuse it.
        """
        self._state = State(
            shapes.App(app_id, app_slug, "pr-check-owner"),
            public_key_pem,
            dict(installation_permissions or DEFAULT_PERMISSIONS),
        )
        self._state.run_details = run_details
        self._prefix = path_prefix.rstrip("/")
        self._faults: list[_Fault] = []
        self._stalls: list[_Stall] = []
        self._before: list[tuple[str, re.Pattern[str], Callable[[], None]]] = []
        self._log: list[dict[str, Any]] = []
        self._auth_failures: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._away_port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, port: int = 0) -> GitHubStandIn:
        """Bind 127.0.0.1 on an ephemeral port (or `port`) and serve in a daemon thread."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", port), _Handler)
        server.standin = self
        port = server.server_address[1]
        with self._state.lock:
            self._state.urls = shapes.Urls(f"http://127.0.0.1:{port}{self._prefix}", f"http://127.0.0.1:{port}")
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="github-standin", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.close_connections()
        if self._thread is not None:  # start() sets both together
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def go_away(self) -> None:
        """GitHub unreachable: the port is closed (connections are refused, open ones dropped) until
        come_back(); everything registered is kept."""
        self._away_port = int(urlsplit(self._state.urls.web).port or 0)
        self.stop()

    def come_back(self) -> GitHubStandIn:
        """Serve again on the port go_away() closed, with the state it had."""
        return self.start(self._away_port)

    def __enter__(self) -> GitHubStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """What to pass as PyGithub's base_url (http://127.0.0.1:PORT plus any path prefix)."""
        if self._server is None:
            raise RuntimeError("GitHubStandIn is not started")
        return self._state.urls.api

    @property
    def web_url(self) -> str:
        """The stand-in's github.com: the root of every html_url."""
        return self._state.urls.web

    @property
    def bot_login(self) -> str:
        """The login the App's own comments and reviews carry ("<slug>[bot]")."""
        return self._state.app.bot_login

    # -- registration -----------------------------------------------------------------------------

    def add_repo(
        self,
        owner: str,
        name: str,
        bare_git_path: str | None = None,
        permissions: Mapping[str, str] | None = None,
        *,
        installation_id: int | None = 1,
        default_branch: str = "main",
        private: bool = False,
        fork: bool = False,
    ) -> dict[str, Any]:
        """Register a repository the App is installed on (`installation_id` None: one it is not, a fork).

        `permissions` maps login -> admin | maintain | write | triage | read | none; a login not in it
        reads as "read" on a public repository and "none" on a private one. A fork may have a bare repo
        of its own; a push to a pull request's head branch there is copied into the base's.
        """
        with self._state.lock:
            repo = Repo(
                owner,
                name,
                self._state.next_id("repo"),
                installation_id,
                str(bare_git_path) if bare_git_path is not None else None,
                dict(permissions or {}),
                default_branch,
                private,
                fork,
            )
            self._state.repos[(owner.lower(), name.lower())] = repo
            return shapes.repo(self._state.urls, repo)

    def set_permissions(self, owner: str, name: str, permissions: Mapping[str, str]) -> None:
        """Replace the repository's collaborator permission table."""
        with self._state.lock:
            self._repo(owner, name).permissions = dict(permissions)

    def add_pull(
        self,
        owner: str,
        name: str,
        number: int,
        head_sha: str,
        base_sha: str,
        head_ref: str,
        base_ref: str,
        author: str,
        author_association: str = "CONTRIBUTOR",
        diff_text: str | None = None,
        *,
        draft: bool = False,
        title: str | None = None,
        body: str = "",
        head_repo: tuple[str, str] | None = None,
        binary_paths: tuple[str, ...] | frozenset[str] = (),
        maintainer_can_modify: bool = False,
    ) -> dict[str, Any]:
        """Register an open pull request; returns its JSON.

        With `diff_text` None the diff is `git diff base...head` in the repository's bare repo.
        `head_repo` names a registered fork (owner, name). Paths in `binary_paths` come without
        `patch` from the files endpoint, as GitHub does for binary and oversized files.
        `maintainer_can_modify`: the author of a fork's pull request allows maintainers (and the App)
        to push to its head branch. The head branch is created in the head repository if missing.
        """
        with self._state.lock:
            repo = self._repo(owner, name)
            head = self._state.make_head(repo, base_sha, head_sha, diff_text)
            stamp = now_iso()
            pull = Pull(
                repo=repo,
                number=number,
                id=self._state.next_id("pull"),
                head_ref=head_ref,
                base_ref=base_ref,
                author=author,
                author_association=author_association,
                head_repo=self._repo(*head_repo) if head_repo else repo,
                draft=draft,
                title=title if title is not None else f"Pull request {number}",
                body=body,
                state="open",
                binary_paths=frozenset(binary_paths),
                heads=[head],
                created_at=stamp,
                updated_at=stamp,
                maintainer_can_modify=maintainer_can_modify,
            )
            _create_branch(pull, head_sha)
            self._state.pulls[(owner.lower(), name.lower(), number)] = pull
            return self._state.pull_shape(pull)

    def update_pull_head(
        self,
        owner: str,
        name: str,
        number: int,
        head_sha: str,
        diff_text: str | None = None,
        *,
        base_sha: str | None = None,
    ) -> dict[str, Any]:
        """Move the PR to a new head (a push); returns the `pull_request.synchronize` payload.

        The head branch is left where it is: a test that pushes to it moves it itself.

        Review comments are re-anchored like GitHub's: a comment whose line still shows the same
        text in the new diff keeps its place; the others become outdated (line and position None,
        original_* kept).
        """
        with self._state.lock:
            pull = self._pull(owner, name, number)
            before = pull.head.sha
            head = self._state.make_head(pull.repo, base_sha or pull.head.base_sha, head_sha, diff_text)
            self._state.advance_pull(pull, head)
            return payloads.pull_request(self._state, pull, "synchronize", before)

    def add_issue_comment(
        self,
        owner: str,
        name: str,
        number: int,
        body: str,
        user: str,
        *,
        author_association: str = "MEMBER",
        user_type: str = "User",
    ) -> dict[str, Any]:
        """A comment someone else wrote on the PR conversation (e.g. "/pr-check"); returns its JSON."""
        with self._state.lock:
            pull = self._pull(owner, name, number)
            stamp = now_iso()
            comment = IssueComment(
                self._state.next_id("issue_comment"),
                pull.repo,
                number,
                user,
                user_type,
                author_association,
                body,
                stamp,
                stamp,
            )
            self._state.issue_comments[comment.id] = comment
            return shapes.issue_comment(self._state.urls, comment, [])

    def add_workflow(
        self,
        owner: str,
        name: str,
        file: str,
        *,
        workflow_name: str | None = None,
        inputs: Mapping[str, bool] | None = None,
    ) -> dict[str, Any]:
        """Register .github/workflows/<file>; `inputs` maps declared input -> required (None: any accepted)."""
        with self._state.lock:
            repo = self._repo(owner, name)
            workflow = Workflow(
                self._state.next_id("workflow"),
                repo,
                file,
                workflow_name or file.rsplit(".", 1)[0],
                dict(inputs) if inputs is not None else None,
                "active",
                shapes.CREATED_AT,
            )
            self._state.workflows[workflow.id] = workflow
            return shapes.workflow(self._state.urls, workflow)

    def set_run_status(
        self, owner: str, name: str, run_id: int, status: str, conclusion: str | None = None
    ) -> dict[str, Any]:
        """Move a workflow run along; returns the matching `workflow_run` webhook payload."""
        with self._state.lock:
            run = self._run(owner, name, run_id)
            run.status, run.conclusion, run.updated_at = status, conclusion, now_iso()
            action = {"completed": "completed", "in_progress": "in_progress"}.get(status, "requested")
            return payloads.workflow_run(self._state, run, action)

    def complete_run(self, owner: str, name: str, run_id: int, conclusion: str = "success") -> dict[str, Any]:
        """Finish a workflow run; returns the `workflow_run.completed` payload for the test to deliver."""
        return self.set_run_status(owner, name, run_id, "completed", conclusion)

    def add_delivery(
        self,
        guid: str,
        event: str,
        status_code: int,
        *,
        action: str | None = None,
        redelivery: bool = False,
        installation_id: int | None = 1,
        delivered_at: str | None = None,
    ) -> int:
        """Record a past webhook delivery (for GET /app/hook/deliveries); returns its id."""
        with self._state.lock:
            delivery = Delivery(
                self._state.next_id("delivery"),
                guid,
                event,
                action,
                status_code,
                redelivery,
                installation_id,
                None,
                delivered_at or now_iso(),
            )
            self._state.deliveries[delivery.id] = delivery
            return delivery.id

    def set_diff_limits(self, max_files: int = 300, max_lines: int = 20_000) -> None:
        """Above these, the diff media type answers 406 too_large (GitHub's limits by default)."""
        with self._state.lock:
            self._state.max_diff_files, self._state.max_diff_lines = max_files, max_lines

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests whose method matches ("*" for any) and whose path
        (no query, no prefix) `re.search`-matches with `status`, before authentication.

        `body` defaults to {"message": <reason phrase>}. See SECONDARY_RATE_LIMIT_BODY.
        """
        with self._state.lock:
            self._faults.append(
                _Fault(method.upper(), re.compile(path_regex), status, body, dict(headers or {}), times)
            )

    def stall_next(
        self, method: str, path_regex: str, seconds: float, *, accept: str = "", times: int = 1
    ) -> Callable[[], int]:
        """Hold the next `times` matching requests for `seconds` before answering them, as a
        GitHub that hangs does: a test kills or times out the App while it waits. `accept`, when
        given, must occur in the request's Accept header (the diff media type, say).

        Returns how many requests have been caught so far: a test waits on that before acting on
        the App held there, since what the App did just before (create a check run, say) does not
        mean it has reached the held request yet (it may still be fetching, on a loaded machine).
        """
        stall = _Stall(method.upper(), re.compile(path_regex), accept, seconds, times)
        with self._state.lock:
            self._stalls.append(stall)

        def held() -> int:
            with self._state.lock:
                return stall.held

        return held

    def before_next(self, method: str, path_regex: str, action: Callable[[], None]) -> None:
        """Run `action` once, just before the next matching request is answered: what someone else
        does on GitHub at that moment (a push between the App's review and its own push, say)."""
        with self._state.lock:
            self._before.append((method.upper(), re.compile(path_regex), action))

    def _run_before(self, call: Call) -> None:
        with self._state.lock:
            due = [hook for hook in self._before if hook[0] in ("*", call.method) and hook[1].search(call.path)]
            for hook in due:
                self._before.remove(hook)
        for _, _, action in due:
            action()

    def _stall_for(self, call: Call) -> float:
        with self._state.lock:
            for stall in self._stalls:
                if (
                    stall.method in ("*", call.method)
                    and stall.pattern.search(call.path)
                    and stall.accept in call.headers.get("accept", "")
                ):
                    stall.remaining -= 1
                    stall.held += 1
                    if stall.remaining <= 0:
                        self._stalls.remove(stall)
                    return stall.seconds
        return 0.0

    def expire_tokens(self) -> None:
        """Make every installation token issued so far answer 401, as an expired one does."""
        with self._state.lock:
            self._state.tokens.clear()

    # -- webhook payloads -------------------------------------------------------------------------

    def pull_request_payload(
        self, owner: str, name: str, number: int, action: str = "opened", *, before: str | None = None
    ) -> dict[str, Any]:
        with self._state.lock:
            return payloads.pull_request(self._state, self._pull(owner, name, number), action, before)

    def issue_comment_payload(self, owner: str, name: str, comment_id: int, action: str = "created") -> dict[str, Any]:
        with self._state.lock:
            comment = self._state.issue_comments[comment_id]
            pull = self._pull(owner, name, comment.number)
            return payloads.issue_comment(self._state, pull, comment, action)

    def workflow_run_payload(self, owner: str, name: str, run_id: int, action: str = "completed") -> dict[str, Any]:
        with self._state.lock:
            return payloads.workflow_run(self._state, self._run(owner, name, run_id), action)

    def check_run_payload(
        self,
        owner: str,
        name: str,
        check_run_id: int,
        action: str = "rerequested",
        *,
        requested_action: str | None = None,
        sender: str = "octocat",
    ) -> dict[str, Any]:
        with self._state.lock:
            run = self._state.check_runs[check_run_id]
            assert run.repo is self._repo(owner, name)
            return payloads.check_run(self._state, run, action, requested_action, sender)

    # -- inspection -------------------------------------------------------------------------------

    def pull(self, owner: str, name: str, number: int) -> dict[str, Any]:
        with self._state.lock:
            return self._state.pull_shape(self._pull(owner, name, number))

    def reviews(self, owner: str, name: str, number: int) -> list[dict[str, Any]]:
        with self._state.lock:
            pull = self._pull(owner, name, number)
            found = sorted((r for r in self._state.reviews.values() if r.pull is pull), key=lambda r: r.id)
            return [shapes.review(self._state.urls, r) for r in found]

    def review_comments(self, owner: str, name: str, number: int) -> list[dict[str, Any]]:
        """Current (not deleted) review comments of the PR, oldest first."""
        with self._state.lock:
            pull = self._pull(owner, name, number)
            found = sorted(
                (c for c in self._state.review_comments.values() if c.pull is pull and not c.deleted),
                key=lambda c: c.id,
            )
            return [shapes.review_comment(self._state.urls, c, self._state.reactions_of(c.id)) for c in found]

    def issue_comments(self, owner: str, name: str, number: int) -> list[dict[str, Any]]:
        """Current (not deleted) conversation comments of the PR, oldest first."""
        with self._state.lock:
            repo = self._repo(owner, name)
            found = sorted(
                (
                    c
                    for c in self._state.issue_comments.values()
                    if c.repo is repo and c.number == number and not c.deleted
                ),
                key=lambda c: c.id,
            )
            return [shapes.issue_comment(self._state.urls, c, self._state.reactions_of(c.id)) for c in found]

    def reactions(self, owner: str, name: str, comment_id: int) -> list[dict[str, Any]]:
        """Reactions on one issue comment."""
        with self._state.lock:
            self._repo(owner, name)
            return [shapes.reaction(self._state.urls, r) for r in self._state.reactions_of(comment_id)]

    def check_runs(self, owner: str, name: str, head_sha: str | None = None) -> list[dict[str, Any]]:
        """Check runs of the repository (optionally of one SHA), oldest first, as GET returns them."""
        with self._state.lock:
            repo = self._repo(owner, name)
            found = sorted(
                (r for r in self._state.check_runs.values() if r.repo is repo and head_sha in (None, r.head_sha)),
                key=lambda r: r.id,
            )
            return [routes.check_run_shape(self._state, r) for r in found]

    def annotations(self, owner: str, name: str, check_run_id: int) -> list[dict[str, Any]]:
        """Every annotation the check run accumulated, in the order received."""
        with self._state.lock:
            run = self._state.check_runs[check_run_id]
            assert run.repo is self._repo(owner, name)
            return [shapes.annotation(self._state.urls, run, a) for a in run.annotations]

    def dispatches(self, owner: str, name: str) -> list[dict[str, Any]]:
        """Workflow dispatches received: {workflow, ref, inputs, run_id, return_run_details, repo}."""
        with self._state.lock:
            full_name = self._repo(owner, name).full_name
            return [copy.deepcopy(d) for d in self._state.dispatches if d["repo"] == full_name]

    @property
    def delivery_attempts(self) -> list[int]:
        """Delivery ids the App asked to redeliver, in order."""
        with self._state.lock:
            return list(self._state.delivery_attempts)

    @property
    def tokens_issued(self) -> int:
        with self._state.lock:
            return self._state.tokens_issued

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return [Request(e["method"], e["path"], e["status"]) for e in self._log]

    @property
    def request_log(self) -> list[dict[str, Any]]:
        """Every request in full: method, path, query, headers (lower-case), body (bytes), status."""
        with self._state.lock:
            return copy.deepcopy(self._log)

    @property
    def auth_failures(self) -> list[str]:
        """Why each refused credential was refused (the 401 body only says "Bad credentials")."""
        with self._state.lock:
            return list(self._auth_failures)

    # -- serving ----------------------------------------------------------------------------------

    def _repo(self, owner: str, name: str) -> Repo:
        return self._state.repos[(owner.lower(), name.lower())]

    def _pull(self, owner: str, name: str, number: int) -> Pull:
        return self._state.pulls[(owner.lower(), name.lower(), number)]

    def _run(self, owner: str, name: str, run_id: int) -> WorkflowRun:
        run = self._state.runs[run_id]
        assert run.workflow.repo is self._repo(owner, name)
        return run

    def _answer(self, call: Call) -> Reply:
        """Fault, route, authenticate, authorize, run: the whole life of one request."""
        state = self._state
        with state.lock:
            fault = self._take_fault(call)
            if fault is not None:
                return self._with_rate_headers(fault, count=True)
            route, params = _find_route(call)
            if route is None:
                return self._with_rate_headers(error(404, "Not Found"), count=True)
            call.params = params
            refusal = self._authenticate(call, route)
            if refusal is None and route.auth == "token":
                refusal = _authorize(call, route)
            if refusal is not None:
                return self._with_rate_headers(refusal, count=True)
            try:
                reply = route.handler(state, call)
            except Abort as abort:
                reply = abort.reply
            return self._with_rate_headers(reply, count=route.auth != "none")

    def _take_fault(self, call: Call) -> Reply | None:
        for fault in self._faults:
            if fault.method in ("*", call.method) and fault.pattern.search(call.path):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                body = fault.body
                if body is None:
                    body = error(fault.status, HTTPStatus(fault.status).phrase).body
                return Reply(fault.status, copy.deepcopy(body), dict(fault.headers))
        return None

    def _authenticate(self, call: Call, route: routes.Route) -> Reply | None:
        scheme, _, credential = call.headers.get("authorization", "").partition(" ")
        scheme = scheme.lower()
        if route.auth == "none":
            return None
        if route.auth == "jwt":
            if scheme != "bearer" or not credential:
                self._auth_failures.append(f"{call.method} {call.path}: no Bearer JWT")
                return error(401, "A JSON web token could not be decoded")
            problem = jwt_problem(credential, self._state.public_key_pem, self._state.app.id, time.time())
            if problem is None:
                return None
            self._auth_failures.append(f"{call.method} {call.path}: {problem}")
            if problem == "A JSON web token could not be decoded":
                return error(401, problem)
            return error(401, "Bad credentials")
        if not scheme:
            self._auth_failures.append(f"{call.method} {call.path}: no Authorization header")
            return error(401, "Requires authentication")
        token = self._state.tokens.get(credential) if scheme in ("token", "bearer") else None
        if token is None or token.expires_at <= time.time():
            self._auth_failures.append(f"{call.method} {call.path}: not a live installation token")
            return error(401, "Bad credentials")
        call.installation_id, call.permissions = token.installation_id, token.permissions
        return None

    def _with_rate_headers(self, reply: Reply, *, count: bool) -> Reply:
        state = self._state
        if count:
            state.rate_used += 1
        headers = {
            "x-ratelimit-limit": str(state.rate_limit),
            "x-ratelimit-remaining": str(max(state.rate_limit - state.rate_used, 0)),
            "x-ratelimit-reset": str(state.rate_reset),
            "x-ratelimit-used": str(state.rate_used),
            "x-ratelimit-resource": "core",
        }
        headers.update({k.lower(): v for k, v in reply.headers.items()})
        return Reply(reply.status, reply.body, headers)

    def _record(self, call: Call, status: int) -> None:
        with self._state.lock:
            self._log.append(
                {
                    "method": call.method,
                    "path": call.path,
                    "query": dict(call.query),
                    "headers": dict(call.headers),
                    "body": call.body,
                    "status": status,
                }
            )

    def _strip_prefix(self, path: str) -> str | None:
        if not self._prefix:
            return path
        if path == self._prefix or path.startswith(self._prefix + "/"):
            return path[len(self._prefix) :] or "/"
        return None


def _find_route(call: Call) -> tuple[routes.Route | None, dict[str, str]]:
    for route in routes.ROUTES:
        if route.method == call.method:
            match = route.pattern.fullmatch(call.path)
            if match:
                return route, match.groupdict()
    return None, {}


def _authorize(call: Call, route: routes.Route) -> Reply | None:
    if not route.permission or any(grants(call.permissions, name, level) for name, level in route.permission):
        return None
    reply = error(403, "Resource not accessible by integration")
    reply.headers["x-accepted-github-permissions"] = "; ".join(f"{n}={lvl}" for n, lvl in route.permission)
    return reply


def _create_branch(pull: Pull, sha: str) -> None:
    """Create the pull request's head branch in its head repository, unless it exists already."""
    path = pull.head_repo.bare_git_path
    if path is None:
        return
    with contextlib.suppress(RuntimeError):  # the branch exists already, or the head is not in that repository
        gitrepos.git(path, "update-ref", f"refs/heads/{pull.head_ref}", sha, "")


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that stop() can close idle keep-alive ones at once."""

    daemon_threads = True
    standin: GitHubStandIn

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            open_now = list(self.connections)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"
    sys_version = ""
    timeout = 30  # idle keep-alive connections close after this
    disable_nagle_algorithm = True  # else headers and body in two segments cost a 40 ms delayed ACK
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the stand-in keeps its own request log

    def _serve(self) -> None:
        standin = self.server.standin
        body = self._read_body()
        split = urlsplit(self.path)
        path = standin._strip_prefix(unquote(split.path))
        call = Call(
            method=self.command,
            path=path if path is not None else split.path,
            query=dict(parse_qsl(split.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        if path is not None:
            standin._run_before(call)
        stall = standin._stall_for(call) if path is not None else 0.0
        if stall:
            time.sleep(stall)  # outside the state lock: other requests are answered meanwhile
        if path is None:
            reply = standin._with_rate_headers(error(404, "Not Found"), count=False)
        else:
            try:
                reply = standin._answer(call)
            except Exception as crash:  # a stand-in bug: answer 500 and let the test see it
                reply = error(500, f"stand-in crashed: {crash!r}")
        standin._record(call, reply.status)
        self._write(reply)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _write(self, reply: Reply) -> None:
        if reply.body is None:
            payload = b""
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        headers = {
            "content-type": "application/json; charset=utf-8",
            "x-github-media-type": "github.v3; format=json",
            "x-github-request-id": uuid.uuid4().hex[:20].upper(),
            **reply.headers,
        }
        if reply.status == 204 or reply.body is None:
            headers.pop("content-type")
        for name, value in headers.items():
            self.send_header(name, value)
        if reply.status != 204:
            self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if payload and reply.status != 204:
            self.wfile.write(payload)
