"""One review in a supervised child process: a deadline for the whole review, an address-space cap.

A pull request is hostile input. The Starlark interpreter, the CMake model and the C++ scanner run
native code and can crash (a list literal nested 5,000 deep segfaults the interpreter), loop or
allocate without bound on crafted files. None of that may stop the worker, so everything that reads
the pull request's content runs here, in a child forked from a clean server process (multiprocessing's
`forkserver`, which preloads the engine once so a child starts in milliseconds):

- the child caps its own address space (RLIMIT_AS) and CPU time (RLIMIT_CPU, a backstop for an
  orphan whose parent died), drops the App's secrets from its environment, and reports its phase
  as it goes, so that a crash can be blamed on what it was reading;
- the parent waits until the deadline, then kills it. A crash (a signal), a timeout or an exhausted
  memory budget comes back as a `ReviewFailed` value, never as an exception of the worker.

The child never receives the installation token: the parent fetches, the child only reads git objects.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

PRELOAD = ["pr_check.review", "bot.render.json", "bot.diff"]  # pr_check.review imports the checks
_SECRET_VARIABLES = ("PR_CHECK_WEBHOOK_SECRET", "PR_CHECK_PRIVATE_KEY_FILE")


class Step(Enum):
    """What the review child was doing; the value is the prose a pull request reads."""

    STARTING = "starting"
    EVALUATING = "evaluating the base and head revisions"
    BUCK_PACKAGES = "evaluating Buck packages"
    WRITING_REPORT = "writing the report"
    READING_DIFF = "reading GitHub's diff"
    JUDGING_FIXES = "checking where the fixes would take targets"
    ALLOCATING = "allocating memory"
    SENDING_RESULT = "sending the result"


@dataclass(frozen=True, slots=True)
class Phase:
    """Where the review child was last heard from: a step, and the Buck cell while it evaluated one."""

    step: Step
    cell: str = ""

    def __str__(self) -> str:
        return f"{self.step.value} of cell `{self.cell}`" if self.cell else self.step.value


@dataclass(frozen=True, slots=True)
class ReviewLimits:
    """What one review may use."""

    deadline_s: float = 600.0  # wall clock, fetch excluded, rendering of the report included
    memory_bytes: int = 4 << 30  # address space of the child


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """Everything the child needs; plain values, so it pickles."""

    repo_path: str
    base_sha: str
    head_sha: str
    cache_dir: str
    report_path: str | None  # where the JSON report is written (inside the budget), if anywhere
    github_diff: str | None  # GitHub's own diff of the pull request, parsed in the child
    judge_fixes: bool = False  # `/pr-check fix`: also judge the commit of fixes (webhooks/fix_judgment.py)


@dataclass(frozen=True, slots=True)
class ReviewDone:
    """The review finished: its report, and the changes comments are placed against."""

    report: Any  # bot.pipeline.Report
    changes: Any  # bot.diff.ChangeSet (GitHub's diff, or the local one when GitHub's was not given)
    # With `judge_fixes`: a pr_check.fix_platforms.FileVerdict for each file of the commit of fixes
    # (an empty tuple when it has none); None when the request did not ask.
    fix_verdicts: Any = None


class FailureKind(StrEnum):
    """How a review failed to finish; the string is what metrics and logs name it by."""

    CRASH = "crash"  # the child died (a signal, or an exit without a result)
    TIMEOUT = "timeout"  # past the deadline: killed
    MEMORY = "memory"  # its address-space budget ran out
    ERROR = "error"  # it raised, or sent back what could not be read


@dataclass(frozen=True, slots=True)
class ReviewFailed:
    """The review did not finish."""

    kind: FailureKind
    detail: str  # what happened, in words, for the pull request
    phase: Phase  # what the child was doing when it was last heard from
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class ReviewRefused:
    """The engine refused the input for good (a PrCheckError: unreadable repository, bad config)."""

    message: str


Outcome = ReviewDone | ReviewFailed | ReviewRefused

_context: Any = None


def _forkserver() -> Any:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _context = context
    return _context


# What the child runs: (request, report a phase) -> the message sent back. `review_in_child` in the
# product; the tests pass a module-level function that misbehaves (it is pickled into the child).
ChildWork = Callable[[ReviewRequest, Callable[..., None]], tuple]


def run_review(request: ReviewRequest, limits: ReviewLimits, work: ChildWork | None = None) -> Outcome:
    """Run one review in a child process and wait for it, at most until the deadline."""
    context = _forkserver()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_child, args=(sender, request, limits, work or review_in_child), name="pr-check review", daemon=True
    )
    started = time.monotonic()
    child.start()
    sender.close()  # the child holds the only writer: end of file means it is gone
    phase = Phase(Step.STARTING)
    try:
        while True:
            remaining = limits.deadline_s - (time.monotonic() - started)
            if remaining <= 0 or not receiver.poll(remaining):
                _stop(child)
                return ReviewFailed(
                    FailureKind.TIMEOUT, f"the review did not finish within {limits.deadline_s:g} s", phase
                )
            try:
                message = receiver.recv()
            except (EOFError, OSError):
                return _died(child, phase, limits)
            except Exception as error:  # a result that does not unpickle is the child's fault, not ours
                _stop(child)
                return ReviewFailed(
                    FailureKind.ERROR, f"the review's result could not be read: {type(error).__name__}", phase
                )
            kind = message[0]
            if kind == "phase":
                phase = message[1]
            elif kind == "done":
                child.join(5)
                return ReviewDone(*message[1:])
            elif kind == "refused":
                child.join(5)
                return ReviewRefused(message[1])
            elif kind == "memory":
                child.join(5)
                return ReviewFailed(
                    FailureKind.MEMORY,
                    f"the review ran out of its {_gib(limits.memory_bytes)} memory budget",
                    message[1],
                )
            else:  # "error"
                child.join(5)
                return ReviewFailed(FailureKind.ERROR, message[1], phase)
    finally:
        receiver.close()
        if child.is_alive():
            _stop(child)


def _died(child: Any, phase: Phase, limits: ReviewLimits) -> ReviewFailed:
    child.join(10)
    code = child.exitcode
    if code is not None and code < 0:
        number = -code
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
        detail = f"the review process crashed ({name})"
        if number in (signal.SIGABRT, signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS):
            detail += f"; its memory budget is {_gib(limits.memory_bytes)}"
    else:
        detail = f"the review process exited with status {code} without a result"
    return ReviewFailed(FailureKind.CRASH, detail, phase, code)


def _stop(child: Any) -> None:
    child.kill()
    child.join(10)


def _gib(size: int) -> str:
    return f"{size / (1 << 30):g} GiB"


# -- the child -------------------------------------------------------------------------------
def _child(sender: Any, request: ReviewRequest, limits: ReviewLimits, work: ChildWork) -> None:
    for name in _SECRET_VARIABLES:
        os.environ.pop(name, None)
    _limit(resource.RLIMIT_AS, limits.memory_bytes)
    # A backstop only: the parent kills at the deadline; this ends a child whose parent is gone.
    _limit(resource.RLIMIT_CPU, int(limits.deadline_s) + 30)
    faulthandler.enable(sys.stderr)  # a crash leaves the Python stack in the worker's log

    def phase(step: Step, cell: str = "") -> None:
        sender.send(("phase", Phase(step, cell)))

    try:
        outcome = work(request, phase)
    except MemoryError:
        outcome = ("memory", Phase(Step.ALLOCATING))
    except Exception as error:
        from bot.errors import PrCheckError

        if isinstance(error, PrCheckError):
            outcome = ("refused", str(error))
        else:
            outcome = ("error", f"the review raised {type(error).__name__}: {str(error)[:300]}")
    try:
        sender.send(outcome)
    except MemoryError:
        sender.send(("memory", Phase(Step.SENDING_RESULT)))
    sender.close()


def _limit(which: int, value: int) -> None:
    _soft, hard = resource.getrlimit(which)
    cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (cap, hard))


def review_in_child(request: ReviewRequest, phase: Callable[..., None]) -> tuple:
    """The review itself, in the child: the message to send back ("done", report, changes, fix verdicts)."""
    import json

    from bot.diff import parse_diff
    from pr_check.review import review_repository

    phase(Step.EVALUATING)
    report = review_repository(
        request.repo_path,
        request.base_sha,
        request.head_sha,
        cache_dir=Path(request.cache_dir),
        progress=lambda cell, index, total: phase(Step.BUCK_PACKAGES, cell),
        compiled=None,
    )
    phase(Step.WRITING_REPORT)
    if request.report_path is not None:
        from bot.render.json import render_json

        target = Path(request.report_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(render_json(report), indent=1))
    changes = report.changes
    if request.github_diff is not None:
        phase(Step.READING_DIFF)
        try:
            changes = parse_diff(request.github_diff)
        except Exception:  # GitHub's diff is only for placing comments; the local diff stands in
            changes = report.changes
    verdicts = None
    if request.judge_fixes:
        from webhooks.fix_judgment import judge_head_fixes

        phase(Step.JUDGING_FIXES)
        verdicts = judge_head_fixes(
            request.repo_path, request.base_sha, request.head_sha, request.cache_dir, report.findings
        )
    return ("done", report, changes, verdicts)


def warm_up() -> None:
    """Start the server review children are forked from, with the engine imported."""
    from multiprocessing import forkserver

    _forkserver()

    forkserver.ensure_running()
