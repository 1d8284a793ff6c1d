"""The GPU smoke job cannot be raced or spoofed (issue 12, point 4), on a server without run details.

- A maintainer's `/pr-check smoke` approves the head of the time of the comment: a push that lands
  after it does not ride on it; that head is dispatched, and a later head needs its own approval.
- Only the run the App dispatched moves the smoke check: a run is matched by the smoke workflow's
  id, the `workflow_dispatch` event and the dispatched branch's commit, never by a name containing
  the (public) correlation id alone.
- An older GitHub Enterprise Server that refuses `return_run_details` still gets the dispatch.
"""

from __future__ import annotations

import pytest

from tests.test_app_harness import OWNER, make_repo, running_app, wait_for

SMOKE = "pr-check / cuda-smoke"
KERNEL = {"backends/cuda/add.cu": "__global__ void add(float* x) { x[0] += 1; }\n"}
KERNEL_2 = {"backends/cuda/add.cu": "__global__ void add(float* x) { x[0] += 2; }\n"}
INPUTS = {"pr": True, "head_sha": True, "correlation_id": True}


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("app"), run_details=False) as app:
        yield app


def _smoke_runs(standin, repo: str, head: str) -> list[dict]:
    return [run for run in standin.check_runs(OWNER, repo, head) if run["name"] == SMOKE]


def _reviewed(standin, repo: str, head: str) -> bool:
    return any(r["name"] == "pr-check" and r["status"] == "completed" for r in standin.check_runs(OWNER, repo, head))


def _comment(running, repo: str, number: int, body: str, created_at: str | None = None) -> dict:
    standin = running.standin
    comment = standin.add_issue_comment(OWNER, repo, number, body, "maria", author_association="MEMBER")
    payload = standin.issue_comment_payload(OWNER, repo, comment["id"])
    if created_at is not None:
        payload["comment"]["created_at"] = created_at
    assert running.deliver("issue_comment", payload).status_code == 202
    return comment


def _bot_replies(standin, repo: str, number: int) -> list[str]:
    return [c["body"] for c in standin.issue_comments(OWNER, repo, number) if c["user"]["login"] == standin.bot_login]


def test_an_approval_covers_the_head_of_its_time_not_a_later_push(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "raced")
    standin.add_workflow(OWNER, "raced", "gpu-smoke.yml", inputs=INPUTS)
    approved = repo.open_pull(1, KERNEL, author="alice")  # alice cannot start it herself
    opened = standin.pull_request_payload(OWNER, "raced", 1)
    opened["pull_request"]["updated_at"] = "2026-08-01T10:00:00Z"
    running.deliver("pull_request", opened)
    wait_for(lambda: _reviewed(standin, "raced", approved), what="the first review")

    # alice pushes after the maintainer wrote the comment (GitHub's clock), before the job runs.
    pushed, synchronize = repo.push(1, KERNEL_2, parent=approved)
    synchronize["pull_request"]["updated_at"] = "2026-08-01T10:10:00Z"
    running.deliver("pull_request", synchronize)
    wait_for(lambda: _reviewed(standin, "raced", pushed), what="the review of the push")
    _comment(running, "raced", 1, "/pr-check smoke", created_at="2026-08-01T10:05:00Z")

    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "raced"), what="the dispatch")
    assert dispatch["inputs"]["head_sha"] == approved  # what the maintainer saw, not the newer push
    assert not dispatch["return_run_details"]  # this server refused them; the dispatch went out without
    assert wait_for(
        lambda: [r for r in _smoke_runs(standin, "raced", approved) if r["status"] == "queued"],
        what="the smoke check on the approved head",
    )
    [reply] = wait_for(lambda: _bot_replies(standin, "raced", 1), what="the note about the newer head")
    assert approved[:12] in reply and pushed[:12] in reply and "approval of its own" in reply

    # The newer head runs only when named (or approved by a newer comment).
    _comment(running, "raced", 1, f"/pr-check smoke {pushed[:10]}", created_at="2026-08-01T10:11:00Z")
    wait_for(lambda: len(standin.dispatches(OWNER, "raced")) == 2, what="the second dispatch")
    assert standin.dispatches(OWNER, "raced")[1]["inputs"]["head_sha"] == pushed
    # A sha that is no head of this pull request starts nothing.
    _comment(running, "raced", 1, "/pr-check smoke deadbeefdeadbeef")
    wait_for(lambda: any("not started" in body for body in _bot_replies(standin, "raced", 1)), what="the refusal")
    assert len(standin.dispatches(OWNER, "raced")) == 2


def test_only_the_dispatched_run_moves_the_smoke_check(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "spoofed")
    standin.add_workflow(OWNER, "spoofed", "gpu-smoke.yml", inputs=INPUTS)
    other = standin.add_workflow(OWNER, "spoofed", "pr-build.yml")
    head = repo.open_pull(2, KERNEL, author="maria", association="MEMBER")
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "spoofed", 2))
    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "spoofed"), what="the automatic dispatch")
    correlation = dispatch["inputs"]["correlation_id"]
    title = f"pr-check smoke: PR #2 at {head} [{correlation}]"

    def forged(run_id_offset: int, **changes) -> dict:
        payload = standin.complete_run(OWNER, "spoofed", dispatch["run_id"], "success")
        payload["workflow_run"].update(id=dispatch["run_id"] + run_id_offset, display_title=title, **changes)
        return payload

    # A pull request's own workflow naming itself after the correlation id; another workflow file;
    # a run of the smoke workflow on another commit: none of them is the dispatched run.
    for payload in (
        forged(1000, event="pull_request"),
        forged(2000, workflow_id=other["id"]),
        forged(3000, head_sha="f" * 40),
    ):
        running.deliver("workflow_run", payload)
    wait_for(lambda: running.queue.store.keys("active") == [], what="the forged events to be handled")
    assert [r["status"] for r in _smoke_runs(standin, "spoofed", head)] == ["queued"]

    # The genuine run (its id unknown to the App on this server) completes it, and is bound to it.
    genuine = standin.complete_run(OWNER, "spoofed", dispatch["run_id"], "failure")
    genuine["workflow_run"]["display_title"] = title
    running.deliver("workflow_run", genuine)
    done = wait_for(
        lambda: [r for r in _smoke_runs(standin, "spoofed", head) if r["status"] == "completed"],
        what="the smoke result",
    )
    assert done[0]["conclusion"] == "failure"
    # A second run carrying the same correlation id later changes nothing.
    running.deliver("workflow_run", forged(4000))
    wait_for(lambda: running.queue.store.keys("active") == [], what="the queue to drain")
    assert [r["conclusion"] for r in _smoke_runs(standin, "spoofed", head)] == ["failure"]
