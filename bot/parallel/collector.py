"""The cyclic garbage collector's policy while reviews run (process-wide, so it lives at the edge).

A review loads about a million long-lived, acyclic objects (cell graphs, CMake models) that the
collector would rescan generation after generation: a quarter of a warm review's time.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_COLLECTOR = {"reviews": 0, "was_enabled": False, "froze": False}
_COLLECTOR_LOCK = threading.Lock()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off a review's objects.

    A review loads ~10^6 long-lived, acyclic objects (cell graphs, CMake models) that the
    collector would rescan generation after generation: a quarter of a warm review. While
    reviews run it is paused; after the last one, what exists is frozen (out of the collector's
    sight, still freed by reference counting once the review drops its models), and the next
    review unfreezes and collects first, so cyclic garbage waits at most until then.
    """
    with _COLLECTOR_LOCK:
        if _COLLECTOR["reviews"] == 0:
            _COLLECTOR["was_enabled"] = gc.isenabled()
            if _COLLECTOR["froze"]:
                gc.unfreeze()
                gc.collect()
                _COLLECTOR["froze"] = False
            gc.disable()
        _COLLECTOR["reviews"] += 1
    try:
        yield
    finally:
        with _COLLECTOR_LOCK:
            _COLLECTOR["reviews"] -= 1
            if _COLLECTOR["reviews"] == 0 and _COLLECTOR["was_enabled"]:
                gc.freeze()
                _COLLECTOR["froze"] = True
                gc.enable()
