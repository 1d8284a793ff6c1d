"""Everything the stand-in knows, and the lookups routes share. Callers hold `State.lock`."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from . import gitrepos, shapes
from .credentials import Token
from .diffs import FilePatch, parse_diff
from .exchange import Abort, Call, error, not_found
from .records import (
    CheckRun,
    Delivery,
    IssueComment,
    Pull,
    PullHead,
    Reaction,
    Repo,
    Review,
    ReviewComment,
    Workflow,
    WorkflowRun,
)

DEFAULT_PERMISSIONS = {
    "actions": "write",
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class State:
    """The stand-in's data. Not thread-safe by itself: every access happens under `lock`."""

    def __init__(self, the_app: shapes.App, public_key_pem: bytes, permissions: dict[str, str]) -> None:
        self.lock = threading.RLock()
        self.app = the_app
        self.public_key_pem = public_key_pem
        self.installation_permissions = dict(permissions)
        self.urls = shapes.Urls("http://127.0.0.1:0", "http://127.0.0.1:0")
        self.repos: dict[tuple[str, str], Repo] = {}
        self.pulls: dict[tuple[str, str, int], Pull] = {}
        self.reviews: dict[int, Review] = {}
        self.review_comments: dict[int, ReviewComment] = {}
        self.issue_comments: dict[int, IssueComment] = {}
        self.reactions: list[Reaction] = []
        self.check_runs: dict[int, CheckRun] = {}
        self.suites: dict[tuple[str, str, str], int] = {}  # (owner, repo, head_sha) -> suite id
        self.workflows: dict[int, Workflow] = {}
        self.runs: dict[int, WorkflowRun] = {}
        self.dispatches: list[dict[str, Any]] = []
        self.deliveries: dict[int, Delivery] = {}
        self.delivery_attempts: list[int] = []
        self.tokens: dict[str, Token] = {}
        self.tokens_issued = 0
        self.max_diff_files = 300
        self.run_details = True  # False: a dispatch asking for run details is refused, as on older GHES
        self.max_diff_lines = 20_000
        self.rate_limit = 5000
        self.rate_used = 0
        self.rate_reset = int(time.time()) + 3600
        # Distinct ranges per kind, so that an id of one kind used as another answers 404.
        self._ids = {
            kind: itertools.count(start)
            for kind, start in (
                ("repo", 100_001),
                ("pull", 2_000_001),
                ("review", 3_000_001),
                ("review_comment", 4_000_001),
                ("issue_comment", 5_000_001),
                ("reaction", 6_000_001),
                ("check_run", 7_000_001),
                ("suite", 8_000_001),
                ("workflow", 9_000_001),
                ("run", 10_000_001),
                ("delivery", 11_000_001),
            )
        }

    def next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    # -- lookups used by routes; each raises Abort with GitHub's answer ---------------------------

    def repo_for(self, call: Call) -> Repo:
        """The route's repository, 404 unless it exists and the caller's installation covers it."""
        repo = self.repos.get((call.params["owner"].lower(), call.params["repo"].lower()))
        if repo is None or (call.installation_id is not None and call.installation_id != repo.installation_id):
            raise not_found()
        return repo

    def pull_for(self, call: Call) -> Pull:
        repo = self.repo_for(call)
        pull = self.pulls.get((repo.owner.lower(), repo.name.lower(), int(call.params["number"])))
        if pull is None:
            raise not_found()
        return pull

    def pulls_of(self, repo: Repo) -> list[Pull]:
        return [p for p in self.pulls.values() if p.repo is repo]

    def review_for(self, call: Call, pull: Pull) -> Review:
        review = self.reviews.get(int(call.params["id"]))
        if review is None or review.pull is not pull:
            raise not_found()
        return review

    def review_comment_for(self, call: Call, repo: Repo) -> ReviewComment:
        comment = self.review_comments.get(int(call.params["id"]))
        if comment is None or comment.deleted or comment.pull.repo is not repo:
            raise not_found()
        return comment

    def issue_comment_for(self, call: Call, repo: Repo) -> IssueComment:
        comment = self.issue_comments.get(int(call.params["id"]))
        if comment is None or comment.deleted or comment.repo is not repo:
            raise not_found()
        return comment

    def check_run_for(self, call: Call, repo: Repo) -> CheckRun:
        run = self.check_runs.get(int(call.params["id"]))
        if run is None or run.repo is not repo:
            raise not_found()
        return run

    def workflow_for(self, call: Call, repo: Repo) -> Workflow:
        key = call.params["workflow"]
        for workflow in self.workflows.values():
            if workflow.repo is repo and key in (workflow.file, str(workflow.id)):
                return workflow
        raise not_found()

    def reactions_of(self, comment_id: int) -> list[Reaction]:
        return [r for r in self.reactions if r.comment_id == comment_id]

    # -- diffs and commits --------------------------------------------------------------------------

    def make_head(self, repo: Repo, base_sha: str, head_sha: str, diff_text: str | None) -> PullHead:
        """A PullHead whose diff is `diff_text`, or `git diff base...head` in the repo's bare clone."""
        blobs: dict[str, tuple[str | None, str | None]] = {}
        if diff_text is None:
            if repo.bare_git_path is None:
                raise ValueError(f"{repo.full_name} has no bare_git_path; pass diff_text")
            diff_text = gitrepos.diff(repo.bare_git_path, base_sha, head_sha)
            full = parse_diff(gitrepos.diff(repo.bare_git_path, base_sha, head_sha, full_index=True))
            blobs = {f.path: (f.old_blob, f.new_blob) for f in full}
        files = tuple(_with_blobs(f, blobs.get(f.path)) for f in parse_diff(diff_text))
        return PullHead(head_sha, base_sha, diff_text, files)

    def advance_pull(self, pull: Pull, head: PullHead) -> None:
        """The pull request's head moves to `head`; review comments are re-anchored as GitHub does."""
        pull.heads.append(head)
        pull.updated_at = now_iso()
        for comment in self.review_comments.values():
            if comment.pull is pull and comment.line is not None:
                _reanchor(comment, head)

    def head_of(self, pull: Pull, sha: str | None) -> PullHead | None:
        """The PR head with this commit SHA (the current one when `sha` is None)."""
        if sha is None:
            return pull.head
        for head in reversed(pull.heads):
            if head.sha == sha:
                return head
        return None

    def commit_shape(self, repo: Repo, ref: str) -> dict[str, Any]:
        """`GET /repos/o/r/commits/{ref}` from the bare repo, or a minimal one for a known PR SHA."""
        if repo.bare_git_path is not None:
            try:
                sha = gitrepos.rev_parse(repo.bare_git_path, ref)
            except RuntimeError:
                sha = None
            if sha:
                return self._git_commit(repo, sha)
        for pull in self.pulls_of(repo):
            for head in pull.heads:
                if ref in (head.sha, head.base_sha):
                    files = [shapes.diff_entry(self.urls, repo, ref, f, with_patch=True) for f in head.files]
                    who = (pull.author, f"{pull.author}@users.noreply.example", shapes.CREATED_AT)
                    parents = [head.base_sha] if ref == head.sha else []
                    return shapes.commit(
                        self.urls,
                        repo,
                        ref,
                        parents=parents,
                        author=who,
                        committer=who,
                        message="",
                        tree=None,
                        files=files if ref == head.sha else [],
                    )
        doc = "https://docs.github.com/rest/commits/commits#get-a-commit"
        raise Abort(error(422, f"No commit found for SHA: {ref}", doc))

    def _git_commit(self, repo: Repo, sha: str) -> dict[str, Any]:
        path = repo.bare_git_path
        if path is None:  # callers reach here only for repositories served from a bare git repo
            raise ValueError(f"{repo.owner}/{repo.name} has no bare git repository to read {sha} from")
        layout = "%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"
        fields = gitrepos.git(path, "show", "-s", f"--format={layout}", sha)
        tree, parents, an, ae, ad, cn, ce, cd, message = fields.split("\x00", 8)
        parent_list = parents.split()
        base = parent_list[0] if parent_list else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree
        head = self.make_head(repo, base, sha, None) if parent_list else _root_head(path, sha)
        files = [shapes.diff_entry(self.urls, repo, sha, f, with_patch=True) for f in head.files]
        return shapes.commit(
            self.urls,
            repo,
            sha,
            parents=parent_list,
            author=(an, ae, _utc(ad)),
            committer=(cn, ce, _utc(cd)),
            message=message.rstrip("\n"),
            tree=tree,
            files=files,
        )

    def issue_comment_count(self, repo: Repo, number: int) -> int:
        return sum(1 for c in self.issue_comments.values() if c.repo is repo and c.number == number and not c.deleted)

    def pull_shape(self, pull: Pull) -> dict[str, Any]:
        review_comments = sum(1 for c in self.review_comments.values() if c.pull is pull and not c.deleted)
        commits = 1
        if pull.repo.bare_git_path is not None:
            try:
                span = f"{pull.head.base_sha}..{pull.head.sha}"
                counted = gitrepos.git(pull.repo.bare_git_path, "rev-list", "--count", span)
                commits = int(counted.strip())
            except RuntimeError:
                pass
        return shapes.pull(
            self.urls,
            pull,
            review_comments=review_comments,
            comments=self.issue_comment_count(pull.repo, pull.number),
            commits=commits,
        )

    def app_shape(self) -> dict[str, Any]:
        return shapes.app(self.urls, self.app, self.installation_permissions)


def _with_blobs(f: FilePatch, blobs: tuple[str | None, str | None] | None) -> FilePatch:
    if blobs is None:
        return f
    return replace(f, old_blob=blobs[0], new_blob=blobs[1])


def _root_head(path: str, sha: str) -> PullHead:
    text = gitrepos.git(path, "-c", "core.quotePath=false", "show", "--format=", "--no-color", "--full-index", sha)
    return PullHead(sha, "", text, parse_diff(text))


def _utc(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reanchor(comment: ReviewComment, head: PullHead) -> None:
    """Keep a comment on the same text in the new diff, or mark it outdated."""
    old_text = comment.diff_hunk.split("\n")[-1][1:] if comment.diff_hunk else None
    file: FilePatch | None = next((f for f in head.files if f.path == comment.path), None)
    found = None
    if file is not None and comment.line is not None:
        found = file.find_line(comment.side or "RIGHT", comment.line)
    if file is not None and found is not None and found[1].text[1:] == old_text:
        hunk_index, row = found
        comment.position, comment.commit_id = row.position, head.sha
        comment.diff_hunk = file.hunk_text_through(hunk_index, row)
        return
    comment.line = comment.start_line = comment.position = None
