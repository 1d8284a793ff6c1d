"""The review-time garbage collector policy restores the collector and never loses objects."""

from __future__ import annotations

import gc
import threading
import weakref

from bot.parallel.collector import collector_paused


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_paused_during_reviews_and_enabled_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested or concurrent reviews keep it off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_cyclic_garbage_of_a_review_is_collected_by_the_next_one():
    with collector_paused():
        garbage = Node()
        watcher = weakref.ref(garbage)
        del garbage
    assert watcher() is not None  # frozen out of sight for now
    with collector_paused():
        pass
    assert watcher() is None


def test_threads_share_one_pause():
    seen = []

    def review():
        with collector_paused():
            seen.append(gc.isenabled())

    workers = [threading.Thread(target=review) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert seen == [False] * 4 and gc.isenabled()
