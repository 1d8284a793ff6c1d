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


FAULTS = {"segv": segv, "hang": hang, "memory": hoard_memory}


def faulty_review(fault: str):
    """A `Services.review` whose child runs FAULTS[fault] instead of the review."""
    return partial(run_review, work=FAULTS[fault])


if __name__ == "__main__":
    from webhooks.worker import main

    sys.exit(main(sys.argv[2:], review=faulty_review(sys.argv[1])))
