"""The cooperative limits of one Buck package's evaluation: CPU time and resident memory.

The interpreter asks `cancelled()` as it runs (bot/buck/evaluation.py); a package over either
limit becomes an evaluation error with the reason, never a hung or killed review.

Time is the evaluating thread's CPU time, not the wall clock. Packages are evaluated by several
threads and processes at once (the App's workers, the check pool); on a busy machine a thread
waits for a core and for the interpreter lock, and a wall-clock budget then ran out on ordinary
packages: one tree gave an evaluation error under load and none when quiet, and the error was
stored with the package's result and served to every later review of those inputs. The wall
clock still bounds a thread that is starved without end (WALL_FACTOR times the CPU budget), and
resident memory is the process's (threads share it): a package stopped by either is `transient`,
its result not to be stored.
"""

from __future__ import annotations

import os
import time

WALL_FACTOR = 20  # a package may wait this many times its CPU budget on a busy machine


class Budget:
    """Cooperative limits checked by the interpreter: CPU time, then wall time and resident memory."""

    def __init__(self, seconds: float, memory_bytes: int) -> None:
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.reason = ""
        self.transient = False  # the limit that stopped it depends on the machine's load
        self._cpu_start = 0.0
        self._wall_deadline = 0.0
        self._rss_start = 0
        self._calls = 0

    def start(self) -> None:
        self.reason = ""
        self.transient = False
        self._cpu_start = time.thread_time()
        self._wall_deadline = time.monotonic() + self.seconds * WALL_FACTOR
        self._rss_start = _resident_bytes()

    def cancelled(self) -> bool:
        self._calls += 1
        if time.thread_time() - self._cpu_start > self.seconds:
            self.reason = f"evaluation exceeded {self.seconds:g} s"
            return True
        if time.monotonic() > self._wall_deadline:
            self.reason = f"evaluation exceeded {self.seconds * WALL_FACTOR:g} s of waiting on a busy machine"
            self.transient = True
            return True
        if _resident_bytes() - self._rss_start > self.memory_bytes:
            self.reason = f"evaluation allocated more than {self.memory_bytes // (1 << 20)} MiB"
            self.transient = True
            return True
        return False


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
