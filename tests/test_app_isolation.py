"""webhooks/isolation.py: a review in a child process; a crash, a stall or a memory blow-up is a value.

Real child processes over real git repositories. The misbehaviours are provoked two ways: a hostile
BUCK file (a list literal nested 5,000 deep, which segfaults the Starlark interpreter at the time of
writing) and children that misbehave on purpose (tests/app_faults.py), which do not depend on any
library's weaknesses.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.app_faults import FAULTS, stuck_check_worker
from tests.processes import gone
from tests.standin import gitrepos
from tests.test_app_harness import BASE_FILES, BUCK_DEFECT, DEFECT_LINE, RULE
from webhooks.failures import concerned_path, failure_finding
from webhooks.isolation import (
    FailureKind,
    Phase,
    ReviewDone,
    ReviewFailed,
    ReviewLimits,
    ReviewRequest,
    Step,
    run_review,
)

NESTED_BUCK = "X = " + "[" * 5000 + "]" * 5000 + "\n"


def _request(tmp_path, files: dict) -> ReviewRequest:
    path = tmp_path / "repo.git"
    base = gitrepos.make_bare_repo(path, BASE_FILES)
    head = gitrepos.commit(path, files, parent=base)
    return ReviewRequest(str(path), base, head, str(tmp_path / "cache"), str(tmp_path / "report.json"), None)


def test_a_review_in_a_child_returns_the_same_report_as_in_process(tmp_path):
    outcome = run_review(_request(tmp_path, {"BUCK": BUCK_DEFECT}), ReviewLimits(deadline_s=120))
    assert isinstance(outcome, ReviewDone)
    assert [(f.rule, f.path, f.line) for f in outcome.report.findings] == [(RULE, "BUCK", DEFECT_LINE)]
    assert outcome.changes.get("BUCK").added == frozenset({DEFECT_LINE})
    assert (tmp_path / "report.json").is_file()  # written inside the budget, by the child


def test_a_hostile_build_file_is_a_failed_review_not_a_dead_process(tmp_path):
    outcome = run_review(_request(tmp_path, {"BUCK": NESTED_BUCK}), ReviewLimits(deadline_s=120))
    if isinstance(outcome, ReviewDone):
        pytest.skip("the Starlark interpreter no longer crashes on deep nesting (the fault switch tests cover this)")
    assert isinstance(outcome, ReviewFailed) and outcome.kind == "crash"
    assert "SIGSEGV" in outcome.detail


# Only the stall needs a short deadline; the others get room, so that a loaded machine's slow child
# start does not turn a crash or a memory blow-up into a timeout.
@pytest.mark.parametrize(
    ("fault", "deadline_s", "kind", "words"),
    [
        ("segv", 60, "crash", "SIGSEGV"),
        ("hang", 3, "timeout", "did not finish within 3 s"),
        ("memory", 60, "memory", "ran out of its 0.5 GiB memory budget"),
    ],
)
def test_a_crash_a_stall_and_a_memory_blowup_each_come_back_as_a_value(tmp_path, fault, deadline_s, kind, words):
    outcome = run_review(
        _request(tmp_path, {"BUCK": BUCK_DEFECT}),
        ReviewLimits(deadline_s=deadline_s, memory_bytes=512 << 20),
        work=FAULTS[fault],
    )
    assert isinstance(outcome, ReviewFailed) and outcome.kind == kind, outcome
    assert words in outcome.detail
    # And the parent goes on: the next review works.
    assert isinstance(
        run_review(_request(tmp_path / "next", {"BUCK": BUCK_DEFECT}), ReviewLimits(deadline_s=120)), ReviewDone
    )


def test_a_check_worker_dies_with_the_review_child_at_the_deadline(tmp_path):
    # The child forks a worker for a share of the checks (bot/parallel/check_split.py); the deadline kills
    # the child with SIGKILL, which no code of the child sees: the worker must go too.
    request = _request(tmp_path, {"BUCK": BUCK_DEFECT})
    outcome = run_review(request, ReviewLimits(deadline_s=15), work=stuck_check_worker)
    assert isinstance(outcome, ReviewFailed) and outcome.kind == "timeout", outcome
    marker = Path(request.report_path or "")
    assert marker.is_file(), "the review child forked no check worker"
    worker = int(marker.read_text())
    deadline = time.monotonic() + 2
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    if not gone(worker):
        os.kill(worker, signal.SIGKILL)  # leave nothing behind, then fail
        pytest.fail(f"the check worker {worker} outlived its review child")


def test_the_child_does_not_inherit_the_apps_secrets(tmp_path, monkeypatch):
    # The child reads hostile files; it has no use for the webhook secret or the key's location.
    monkeypatch.setenv("PR_CHECK_WEBHOOK_SECRET", "s3cret")
    from webhooks import isolation

    assert "PR_CHECK_WEBHOOK_SECRET" in isolation._SECRET_VARIABLES  # noqa: SLF001
    outcome = run_review(_request(tmp_path, {"BUCK": BUCK_DEFECT}), ReviewLimits(deadline_s=120))
    assert isinstance(outcome, ReviewDone)
    assert os.environ["PR_CHECK_WEBHOOK_SECRET"] == "s3cret"  # the parent keeps it


def test_a_failure_is_blamed_on_the_one_build_file_that_can_have_caused_it():
    fbcode = Phase(Step.BUCK_PACKAGES, "fbcode")
    assert concerned_path(fbcode, ["a.cpp", "x/BUCK", "doc.md"]) == "x/BUCK"
    assert concerned_path(fbcode, ["x/BUCK", "y/TARGETS"]) is None
    assert concerned_path(fbcode, ["defs.bzl"]) == "defs.bzl"
    assert concerned_path(Phase(Step.STARTING), ["CMakeLists.txt"]) == "CMakeLists.txt"
    assert concerned_path(Phase(Step.STARTING), ["a", "b"]) is None
    # A step whose prose happens to name Buck is not the Buck step: the branch reads the value, not words.
    assert concerned_path(Phase(Step.EVALUATING), ["x/BUCK", "a.cpp"]) is None
    crash = ReviewFailed(FailureKind.CRASH, "the review process crashed (SIGSEGV)", Phase(Step.BUCK_PACKAGES, "xplat"))
    assert str(crash.phase) == "evaluating Buck packages of cell `xplat`"
    on_file = failure_finding(crash, ["x/BUCK", "x/a.cpp"])
    assert (on_file.rule, on_file.path, on_file.line) == ("internal-error", "x/BUCK", 1)
    assert "SIGSEGV" in on_file.message and "`x/BUCK`" in on_file.message
    on_pull = failure_finding(crash, ["x/BUCK", "y/BUCK"])
    assert on_pull.path == "" and "2 files" in on_pull.message
