"""Helpers for tests that watch processes the code under test forks."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie no one has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return status.rsplit(")", 1)[1].split()[0] == "Z"


def kill_and_expect_worker_gone(process: subprocess.Popen, worker: int, within_s: float = 2.0) -> None:
    """SIGKILL `process` (none of its handlers or `finally` blocks run) and assert that its forked
    `worker` is gone within `within_s`: the kernel's parent-death signal, not our code, ends it."""
    process.kill()
    process.wait()
    deadline = time.monotonic() + within_s
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone(worker)


def leave_nothing_behind(process: subprocess.Popen, worker: int) -> None:
    """After a test, pass or fail: neither the process nor a stuck worker of it is left running."""
    if process.poll() is None:
        process.kill()
        process.wait()
    if worker and not gone(worker):
        os.kill(worker, signal.SIGKILL)
