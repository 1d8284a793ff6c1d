"""The App side of the GPU smoke job: dispatch it, follow its workflow run, never leave it pending.

Trusted authors (write permission) get the job automatically when a change is CUDA-touching;
anyone else's pull request waits for a maintainer's `/pr-check smoke`, because the job runs the
pull request's code on our GPU machines. A dispatch carries a correlation id (inputs `pr`,
`head_sha`, `correlation_id`); the workflow is expected to put it in its `run-name`.

Only the run the App dispatched may move the smoke check, and the correlation id is public (it is
in the check run), so a `workflow_run` event is matched by what an outsider cannot choose: the run
id GitHub returned for the dispatch (`return_run_details`); on servers without run details, the
smoke workflow's id, the `workflow_dispatch` event (only writers can dispatch) and the commit the
dispatched branch pointed at, with the correlation id in the title telling our dispatches apart.
The first run that matches is bound to the smoke run; any other is ignored.

The inline comments of findings the job proves or disproves carry a smoke line (bot/render/github_review.py
renders it): the review writes it as pending, waiting for a maintainer or not required; this module
rewrites it when the job is dispatched on a maintainer's request, completes, cannot start or never
reports, and links those comments from the smoke check run. The line's state for each head is also
recorded, so a later review of the same head writes what is known rather than "pending".
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from bot.render.github_review import (
    SMOKE_CHECK_RUN_NAME,
    PostedComment,
    SmokeNote,
    marked_fingerprint,
    plan_smoke_lines,
)
from bot.render.smoke_check_run import (
    SmokeCheckUpdate,
    SmokeLinked,
    smoke_dispatch_failed,
    smoke_dispatched,
    smoke_from_workflow_run,
    smoke_never_reported,
    smoke_waiting_for_maintainer,
)
from webhooks.commands import WRITE_PERMISSIONS
from webhooks.github_api import GitHubError, PullRequest, RepositoryClient, utc_now
from webhooks.jobs import RepoRef, WorkflowRunChanged, pull_request_key
from webhooks.namespaces import Namespace
from webhooks.services import Services

log = logging.getLogger("pr_check.smoke")

CORRELATION_ID = re.compile(r"\bprc-[0-9a-f]{16}\b")
RECORD_TTL_S = 30 * 24 * 3600.0
_ORDER = {"queued": 0, "in_progress": 1, "completed": 2}


@dataclass(frozen=True, slots=True)
class SmokeRun:
    """One dispatched (or waiting) smoke job and its check run."""

    correlation_id: str
    owner: str
    name: str
    installation_id: int
    number: int
    head_sha: str
    check_run_id: int
    deadline: float
    state: str  # queued | in_progress | completed
    run_id: int | None = None
    workflow_id: int | None = None  # of the smoke workflow file, when dispatched
    ref_sha: str = ""  # the commit the dispatched branch pointed at: a dispatched run's head_sha

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> SmokeRun:
        return SmokeRun(**json.loads(text))


def _head_key(repo: RepoRef, number: int, head_sha: str) -> str:
    return f"{pull_request_key(repo, number)}@{head_sha}"


def _run_key(owner: str, name: str, run_id: int) -> str:
    return f"{owner}/{name}:{run_id}".lower()


def _note_key(owner: str, name: str, number: int, head_sha: str) -> str:
    return _head_key(RepoRef(owner, name, None), number, head_sha)


def recorded_note(services: Services, owner: str, name: str, number: int, head_sha: str) -> SmokeNote | None:
    """What the smoke lines of this head were last set to say, if the smoke job got that far."""
    text = services.store.get(Namespace.SMOKE_NOTE, _note_key(owner, name, number, head_sha))
    return SmokeNote(**json.loads(text)) if text else None


def _record_note(services: Services, owner: str, name: str, number: int, note: SmokeNote) -> None:
    services.store.put(
        Namespace.SMOKE_NOTE,
        _note_key(owner, name, number, note.head_sha),
        json.dumps(asdict(note)),
        ttl_s=RECORD_TTL_S,
    )


def update_smoke_lines(
    services: Services, client: RepositoryClient, owner: str, name: str, number: int, note: SmokeNote
) -> tuple[SmokeLinked, ...]:
    """Bring the smoke lines of the bot's comments about `note.head_sha` to `note`; returns what they link.

    Recorded first: a review that posts a comment after this reads the new state. A line that already
    says it is not edited again, so a repeat changes nothing.
    """
    _record_note(services, owner, name, number, note)
    posted = [
        PostedComment(c.id, c.path, c.line, c.start_line, c.body, html_url=c.html_url)
        for c in client.review_comments(number)
        if c.in_reply_to is None and c.author_is_bot and marked_fingerprint(c.body) is not None
    ]
    plan = plan_smoke_lines(posted, note)
    for comment_id, body in plan.edits:
        client.edit_review_comment(comment_id, body)
    return plan.linked


def smoke_outlook(
    services: Services, client: RepositoryClient, repo: RepoRef, pull: PullRequest, required: bool
) -> SmokeNote:
    """What a review of this head says about the smoke job, before it starts it (or not)."""
    recorded = recorded_note(services, repo.owner, repo.name, pull.number, pull.head_sha)
    if recorded is not None:
        return recorded
    if not required:
        return SmokeNote("not-required", pull.head_sha)
    trusted = client.collaborator_permission(pull.author) in WRITE_PERMISSIONS
    return SmokeNote("pending" if trusted else "waiting", pull.head_sha)


def _save(services: Services, run: SmokeRun) -> None:
    services.store.put(Namespace.SMOKE, run.correlation_id, run.to_json(), ttl_s=RECORD_TTL_S)
    # The open ones are indexed apart, so the timeout sweep does not read a month of history.
    if run.state == "completed":
        services.store.delete(Namespace.SMOKE_OPEN, run.correlation_id)
    else:
        services.store.put(Namespace.SMOKE_OPEN, run.correlation_id, "1", ttl_s=RECORD_TTL_S)


def check_fields(update: SmokeCheckUpdate) -> dict:
    """The check-run request fields of a smoke state."""
    fields = {"status": update.status, "output": {"title": update.title, "summary": update.summary}}
    if update.conclusion is not None:
        fields["conclusion"] = update.conclusion
        fields["completed_at"] = utc_now()
    if update.details_url:
        fields["details_url"] = update.details_url
    return fields


def start_smoke_if_needed(
    services: Services,
    client: RepositoryClient,
    repo: RepoRef,
    installation: int,
    pull: PullRequest,
    required: bool,
    reasons: Sequence[str],
    *,
    requested_by: str | None,
    outlook: SmokeNote | None = None,
) -> str | None:
    """After a review: dispatch for a trusted author, or say that a maintainer must ask.

    `outlook`: what the review's comments just said (smoke_outlook), which already knows whether the
    author is trusted; without it the permission is looked up.
    """
    if not required:
        return None
    head_key = _head_key(repo, pull.number, pull.head_sha)
    services.store.put(Namespace.SMOKE_REASONS, head_key, json.dumps(list(reasons)), ttl_s=RECORD_TTL_S)
    if services.store.get(Namespace.SMOKE_HEAD, head_key):
        return "already-started"
    if outlook is not None and outlook.state in ("pending", "waiting"):
        trusted = outlook.state == "pending"
    else:
        trusted = client.collaborator_permission(pull.author) in WRITE_PERMISSIONS
    if not trusted:
        if not services.store.put(Namespace.SMOKE_HEAD, head_key, "waiting", only_if_absent=True, ttl_s=RECORD_TTL_S):
            return "already-started"
        _record_note(services, repo.owner, repo.name, pull.number, SmokeNote("waiting", pull.head_sha))
        client.create_check_run(
            SMOKE_CHECK_RUN_NAME, pull.head_sha, **check_fields(smoke_waiting_for_maintainer(reasons))
        )
        return "waiting-for-maintainer"
    return dispatch_smoke(services, client, repo, installation, pull, reasons, requested_by=requested_by)


def recorded_reasons(services: Services, repo: RepoRef, number: int, head_sha: str) -> list[str]:
    """The smoke reasons the last review of this head found, if any."""
    text = services.store.get(Namespace.SMOKE_REASONS, _head_key(repo, number, head_sha))
    return json.loads(text) if text else []


def dispatch_smoke(
    services: Services,
    client: RepositoryClient,
    repo: RepoRef,
    installation: int,
    pull: PullRequest,
    reasons: Sequence[str],
    *,
    requested_by: str | None,
) -> str:
    """Create the smoke check run (queued) and dispatch the workflow for this head.

    On a maintainer's request the comments said "waiting" (or spoke of an earlier run): they are set
    to pending. An automatic dispatch follows the review that just wrote "pending".
    """
    correlation = f"prc-{uuid.uuid4().hex[:16]}"
    check = client.create_check_run(
        SMOKE_CHECK_RUN_NAME,
        pull.head_sha,
        external_id=correlation,
        **check_fields(smoke_dispatched(reasons, correlation, requested_by)),
    )
    run = SmokeRun(
        correlation,
        repo.owner,
        repo.name,
        installation,
        pull.number,
        pull.head_sha,
        check.id,
        deadline=time.time() + services.settings.smoke_timeout_s,
        state="queued",
    )
    # Recorded before dispatching: a retry must not dispatch twice; a lost dispatch times out to neutral.
    _save(services, run)
    try:
        # What a genuine run of this dispatch will report, for matching its events (see the top).
        run = replace(
            run,
            workflow_id=client.workflow_id(services.settings.smoke_workflow),
            ref_sha=client.commit_sha(pull.default_branch),
        )
        _save(services, run)
    except GitHubError as error:
        log.warning("could not read the smoke workflow of %s: %s", repo.full_name, error)
    services.store.put(
        Namespace.SMOKE_HEAD, _head_key(repo, pull.number, pull.head_sha), correlation, ttl_s=RECORD_TTL_S
    )
    pending = SmokeNote("pending", pull.head_sha)
    if requested_by is not None:
        _lines_or_nothing(services, client, repo.owner, repo.name, pull.number, pending)
    else:
        _record_note(services, repo.owner, repo.name, pull.number, pending)
    try:
        run_id = client.dispatch_workflow(
            services.settings.smoke_workflow,
            pull.default_branch,
            {"pr": str(pull.number), "head_sha": pull.head_sha, "correlation_id": correlation},
        )
    except GitHubError as error:
        linked = _lines_or_nothing(
            services, client, repo.owner, repo.name, pull.number, SmokeNote("not-started", pull.head_sha)
        )
        client.update_check_run(
            check.id, **check_fields(smoke_dispatch_failed(error.message or str(error), correlation, linked))
        )
        _save(services, replace(run, state="completed"))
        return "dispatch-failed"
    if run_id is not None:
        _save(services, replace(run, run_id=run_id))
        services.store.put(
            Namespace.SMOKE_RUN, _run_key(repo.owner, repo.name, run_id), correlation, ttl_s=RECORD_TTL_S
        )
    return "dispatched"


def _lines_or_nothing(
    services: Services, client: RepositoryClient, owner: str, name: str, number: int, note: SmokeNote
) -> tuple[SmokeLinked, ...]:
    """update_smoke_lines, best effort: the check run is the record and must not wait on comments.

    The client has already retried what deserved it, so an error here is for good.
    """
    try:
        return update_smoke_lines(services, client, owner, name, number, note)
    except GitHubError:
        log.exception("could not update the smoke lines of %s/%s#%s", owner, name, number)
        services.metrics.error("smoke-lines")
        return ()


def _find_run(services: Services, job: WorkflowRunChanged) -> SmokeRun | None:
    """The smoke run this workflow run is, if it is one the App dispatched (see the top)."""
    if job.event != "workflow_dispatch":
        return None  # a pull request's own workflow can name itself anything, but not be dispatched
    correlation = services.store.get(Namespace.SMOKE_RUN, _run_key(job.repo.owner, job.repo.name, job.run_id))
    bound = correlation is not None
    if correlation is None:
        match = CORRELATION_ID.search(f"{job.name} {job.display_title}")
        correlation = match.group(0) if match else None
    if correlation is None:
        return None
    text = services.store.get(Namespace.SMOKE, correlation)
    if text is None:
        return None
    run = SmokeRun.from_json(text)
    if (run.owner.lower(), run.name.lower()) != (job.repo.owner.lower(), job.repo.name.lower()):
        return None  # a correlation id from another repository's run is not ours to act on
    if run.workflow_id is not None and job.workflow_id != run.workflow_id:
        return None
    if bound:
        return run
    if run.run_id is not None or run.workflow_id is None or not run.ref_sha or job.head_sha != run.ref_sha:
        return None  # bound to another run already, or nothing to tell a genuine run by
    return run


def follow_workflow_run(services: Services, job: WorkflowRunChanged) -> str:
    """Move the smoke check run along with a `workflow_run` event; never backwards."""
    run = _find_run(services, job)
    if run is None:
        return "not-a-smoke-run"
    lease = f"smoke:{run.correlation_id}"
    owner = uuid.uuid4().hex
    if not services.store.acquire_lease(lease, owner, 60.0):
        raise RuntimeError(f"smoke run {run.correlation_id} is being updated elsewhere")
    try:
        run = SmokeRun.from_json(services.store.get(Namespace.SMOKE, run.correlation_id) or run.to_json())
        update = smoke_from_workflow_run(job.status, job.conclusion, job.html_url, run.correlation_id)
        if run.state == "completed" or _ORDER[update.status] < _ORDER.get(run.state, 0):
            return "stale-event"
        client = services.github.repository(run.installation_id, run.owner, run.name)
        if update.status == "completed":
            note = SmokeNote("completed", run.head_sha, conclusion=job.conclusion, run_url=job.html_url)
            linked = _lines_or_nothing(services, client, run.owner, run.name, run.number, note)
            update = smoke_from_workflow_run(job.status, job.conclusion, job.html_url, run.correlation_id, linked)
        client.update_check_run(run.check_run_id, **check_fields(update))
        _save(services, replace(run, state=update.status, run_id=job.run_id))
        services.store.put(
            Namespace.SMOKE_RUN, _run_key(run.owner, run.name, job.run_id), run.correlation_id, ttl_s=RECORD_TTL_S
        )
        return f"smoke-{update.status}"
    finally:
        services.store.release_lease(lease, owner)


def expire_overdue_smoke_runs(services: Services, now: float | None = None) -> list[str]:
    """Complete as neutral every smoke check whose run did not report in time; returns their ids."""
    now = time.time() if now is None else now
    expired = []
    for correlation in services.store.keys(Namespace.SMOKE_OPEN):
        text = services.store.get(Namespace.SMOKE, correlation)
        if text is None:
            services.store.delete(Namespace.SMOKE_OPEN, correlation)
            continue
        run = SmokeRun.from_json(text)
        if run.state == "completed" or run.deadline > now:
            continue
        lease = f"smoke:{correlation}"
        owner = uuid.uuid4().hex
        if not services.store.acquire_lease(lease, owner, 60.0):
            continue
        try:
            current = SmokeRun.from_json(services.store.get(Namespace.SMOKE, correlation) or text)
            if current.state == "completed":
                continue
            client = services.github.repository(run.installation_id, run.owner, run.name)
            silent = SmokeNote("silent", run.head_sha, timeout_s=services.settings.smoke_timeout_s)
            linked = _lines_or_nothing(services, client, run.owner, run.name, run.number, silent)
            client.update_check_run(
                run.check_run_id,
                **check_fields(smoke_never_reported(services.settings.smoke_timeout_s, correlation, linked)),
            )
            _save(services, replace(current, state="completed"))
            expired.append(correlation)
        except GitHubError:
            log.exception("could not time out smoke run %s", correlation)
            services.metrics.error("smoke-timeout")
        finally:
            services.store.release_lease(lease, owner)
    return expired
