"""A review's checks on two cores: a forked worker runs one share of them while the review runs the other.

A cold review of a new head spends nearly all its time in the checks, one after the other on one
core. Once the facts every check needs are derived (the head's Buck cells, evaluated by their own
pool, bot/parallel/evaluation_pool.py), the review forks ONE worker (bot/parallel/worker_process.py: it dies
with the review, and a lost one costs time, never a result). The worker runs the checks of
`Share.WORKER` (a field of each `Check`), each exactly as the engine runs it (head run, baseline run where the head found
something, build-scope and unseen-at-base bookkeeping), and sends back one `CheckOutcome` per
check; the review runs the others meanwhile, and the engine merges all of them in the checks'
order, so findings, their order and the checks run are those of a serial run. Facts the worker
derives go to the store (bot/store/memo.py; writes are atomic), so later reviews reuse them;
the review's own memo does not see them, which is why checks that share a costly fact go together.

Serial (no fork): `PR_CHECK_JOBS=1` or a single usable core (evaluation_pool.default_jobs), a
second thread in the process, a share left empty by the enabled checks, or a tree too small for a
fork to pay (`MIN_PATHS`: fixtures, the rules' examples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, Check, Share
from bot.parallel import worker_process
from bot.tree import note_missing, noting_missing

if TYPE_CHECKING:
    from bot.snapshot import Snapshot

T = TypeVar("T")

MIN_PATHS = 1000  # a smaller tree's checks take less than the fork costs


@dataclass(frozen=True, slots=True)
class _Answer:
    """What the worker sends back: its checks' outcomes in order, the head cells its checks
    evaluated, and the blobs it found missing (bot/tree.py `noting_missing`)."""

    outcomes: tuple[Any, ...]
    head_cells: tuple[str, ...]
    missing: frozenset[str]


def run_checks(
    enabled: Sequence[Check], snapshot: Snapshot, run_one: Callable[[Check], T], *, jobs: int | None = None
) -> list[T]:
    """`run_one(check)` for every enabled check, in order; those of `Share.WORKER` in a forked
    worker when that pays. `jobs`: 1 serial, 2 fork whenever both shares hold a check, None decide."""
    theirs = [index for index, check in enumerate(enabled) if check.share is Share.WORKER]
    mine = [index for index, check in enumerate(enabled) if check.share is not Share.WORKER]
    if not (mine and theirs and _forking_pays(snapshot, jobs)):
        return [run_one(check) for check in enabled]
    if any(check.inputs is None or any(kind in check.inputs for kind in BUCK_FILES) for check in enabled):
        for cell in CELLS:  # every Buck rule reads them: derived once, before the fork, for both
            try:
                snapshot.head.cell(cell)
            except Exception:  # noqa: BLE001 - each check that needs the cell meets the failure and
                break  # reports it as its own internal-error finding, as in a serial run
    shared = [enabled[index] for index in theirs]
    try:
        worker = worker_process.start(partial(_worker, snapshot, shared, run_one))
    except OSError:  # no fork to be had (a process or memory limit): every check runs here
        return [run_one(check) for check in enabled]
    try:
        out = {index: run_one(enabled[index]) for index in mine}
        [(_finished, answer)] = worker_process.answers(
            [worker], lambda answer: isinstance(answer, _Answer) and len(answer.outcomes) == len(shared)
        )
    finally:
        worker_process.stop(worker)
    if answer is None:  # the worker died or answered in pieces: its share runs here
        out.update((index, run_one(enabled[index])) for index in theirs)
    else:
        out.update(zip(theirs, answer.outcomes, strict=True))
        for cell in answer.head_cells:  # the review's statistics list the cells its checks used
            snapshot.head.cell(cell)
        note_missing(answer.missing)
    return [out[index] for index in range(len(enabled))]


def _forking_pays(snapshot: Snapshot, jobs: int | None) -> bool:
    from bot.parallel.evaluation_pool import default_jobs

    if not worker_process.can_fork():
        return False
    if jobs is not None:
        return jobs > 1
    return default_jobs() > 1 and len(snapshot.head.tree.paths()) >= MIN_PATHS


def _worker(snapshot: Snapshot, shared: list[Check], run_one: Callable[[Check], Any]) -> _Answer:
    # The review's progress goes to its own parent (the App's phase reports): not from here.
    snapshot.head.silence()
    snapshot.base.silence()
    with noting_missing() as missing:
        outcomes = tuple(run_one(check) for check in shared)
    return _Answer(outcomes, snapshot.head.cells_used(), frozenset(missing))
