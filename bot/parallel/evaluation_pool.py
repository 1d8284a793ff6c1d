"""Cold evaluation on every core: independent evaluations (a cell's packages) shared out over forked workers.

A cold cell is hundreds of independent package evaluations, each pure Starlark work under the
interpreter's lock, so threads would not help. Each worker is forked after the cell's build
files were read into the tree (so it inherits them and asks git for little), evaluates its share
with its own `CellEvaluator` (the .bzl modules its packages load are evaluated once per share),
sends the results back (frozen values, pickled) and exits: the interpreter heaps go with it, so
memory is bounded by the number of workers, not by the size of the tree. How the workers are
forked, die with the review and answer: bot/parallel/worker_process.py. What a share is
evaluated with is the caller's (bot/buck/cell_graphs.py: a `CellEvaluator` per share).

A share is every k-th package, so slow directories spread over the workers. A batch too small to
pay for the forks (a warm review's changed packages) is evaluated in the process; so is a share
whose worker failed (killed, out of memory), so a lost worker costs time, never a result.
`PR_CHECK_JOBS` sets the number of workers (default: the cores this process may run on, at
most `MAX_JOBS`); 1 turns the pool off, and so does a second thread in the process (a fork is
safe only from a process whose one thread is the forking one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from bot.parallel import worker_process

MAX_JOBS = 8
MIN_PACKAGES_PER_JOB = 24  # below this a fork (and a share's .bzl loads) costs more than it saves

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[int, int], None]  # (index of the item under way or done, number of items)


def default_jobs() -> int:
    """Workers for a cold cell: `PR_CHECK_JOBS`, else the usable cores (at most `MAX_JOBS`)."""
    configured = os.environ.get("PR_CHECK_JOBS", "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(
        1, min(MAX_JOBS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    )


def evaluate(
    items: Sequence[Item],
    evaluate_share: Callable[[Sequence[Item], Progress | None], list[Result]],
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
) -> list[Result]:
    """`evaluate_share(share, progress)` over every item, in worker processes when that pays;
    one result per item, in the items' order."""
    jobs = min(default_jobs() if jobs is None else jobs, len(items) // MIN_PACKAGES_PER_JOB)
    if jobs <= 1 or not worker_process.can_fork():
        return evaluate_share(items, progress)
    shares = [list(range(first, len(items), jobs)) for first in range(jobs)]
    out: list[Result | None] = [None] * len(items)
    finished = 0
    for share, evaluated in _in_workers(items, evaluate_share, shares):
        if evaluated is None:  # the worker died: its share is evaluated here
            evaluated = evaluate_share([items[i] for i in share], None)
        for index, item in zip(share, evaluated, strict=True):
            out[index] = item
        finished += len(share)
        if progress is not None:
            progress(finished - 1, len(items))
    return [item for item in out if item is not None]


def _in_workers(items, evaluate_share, shares):
    """(share, its results or None when its worker failed), as the workers finish."""
    workers = {}
    unforked = []  # shares no worker could be forked for (a process or memory limit): failed ones
    for share in shares:
        work = partial(evaluate_share, [items[i] for i in share], None)
        try:
            workers[worker_process.start(work)] = share
        except OSError:
            unforked.append(share)
    for worker, evaluated in worker_process.answers(workers, lambda answer: isinstance(answer, list)):
        yield workers[worker], evaluated
    for share in unforked:
        yield share, None
