"""Review children that misbehave on purpose (crash, stall, hoard memory), handed to the App through
its services (`Services.review`, `webhooks.worker.main(review=...)`), so that the worker's side of
each failure is shown without depending on which input crashes which library today.

Run as a worker: `python -m tests.app_faults FAULT [worker options]`; FAULT is one of FAULTS.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from functools import partial

from webhooks.isolation import run_review


def segv(request, phase) -> tuple:
    os.kill(os.getpid(), signal.SIGSEGV)
    return ("error", "unreachable: the signal ends the child")


def hang(request, phase) -> tuple:
    while True:
        time.sleep(1)


def hoard_memory(request, phase) -> tuple:
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def stuck_check_worker(request, phase) -> tuple:
    """A real review whose check worker (bot/parallel/check_split.py) never finishes: each check of its
    share, in the worker, writes the worker's pid to `request.report_path` and sleeps. The
    deadline's kill of this child must take the worker with it."""
    import dataclasses

    import checks
    from bot.check import Share
    from pr_check.review import review_repository

    child = os.getpid()

    def stuck(check):
        def run(snapshot, options):
            if os.getpid() != child:
                with open(f"{request.report_path}.tmp", "w") as out:
                    out.write(str(os.getpid()))
                os.rename(f"{request.report_path}.tmp", request.report_path)
                time.sleep(600)
            yield from check.run(snapshot, options)

        return dataclasses.replace(check, run=run)

    shares = [stuck(c) if c.share is Share.WORKER else c for c in checks.ALL]
    review_repository(request.repo_path, request.base_sha, request.head_sha, checks=shares, check_jobs=2)
    return ("error", "unreachable: the worker never answers")


def segv_judging_fixes(request, phase) -> tuple:
    """The real review; then, when asked to judge the fixes (`/pr-check fix`), a crash while judging them."""
    import dataclasses

    from webhooks.isolation import Step, review_in_child

    done = review_in_child(dataclasses.replace(request, judge_fixes=False), phase)
    if request.judge_fixes:
        phase(Step.JUDGING_FIXES)
        os.kill(os.getpid(), signal.SIGSEGV)
    return done


FAULTS = {"segv": segv, "hang": hang, "memory": hoard_memory, "segv-judging-fixes": segv_judging_fixes}


def faulty_review(fault: str):
    """A `Services.review` whose child runs FAULTS[fault] instead of the review."""
    return partial(run_review, work=FAULTS[fault])


if __name__ == "__main__":
    from webhooks.worker import main

    sys.exit(main(sys.argv[2:], review=faulty_review(sys.argv[1])))
