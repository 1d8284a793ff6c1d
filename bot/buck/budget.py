"""The cooperative limits of one Buck package's evaluation: wall time and resident memory.

The interpreter asks `cancelled()` as it runs (bot/buck/evaluation.py); a package over either
limit becomes an evaluation error with the reason, never a hung or killed review.
"""

from __future__ import annotations

import os
import time


class Budget:
    """Cooperative limits checked by the interpreter: wall time and resident memory."""

    def __init__(self, seconds: float, memory_bytes: int) -> None:
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.reason = ""
        self._deadline = 0.0
        self._rss_start = 0
        self._calls = 0

    def start(self) -> None:
        self.reason = ""
        self._deadline = time.monotonic() + self.seconds
        self._rss_start = _resident_bytes()

    def cancelled(self) -> bool:
        self._calls += 1
        if time.monotonic() > self._deadline:
            self.reason = f"evaluation exceeded {self.seconds:g} s"
            return True
        if _resident_bytes() - self._rss_start > self.memory_bytes:
            self.reason = f"evaluation allocated more than {self.memory_bytes // (1 << 20)} MiB"
            return True
        return False


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
