"""Forked workers (bot/parallel/worker_process.py): answers come back whole or not at all, and a worker dies
with its parent (both pools, Buck evaluation and the checks' share, fork through here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bot.parallel import worker_process
from tests.processes import gone, kill_and_expect_worker_gone, leave_nothing_behind

ROOT = Path(__file__).resolve().parents[1]


def _answers(*works, valid=lambda answer: True) -> list:
    workers = [worker_process.start(work) for work in works]
    by_worker = dict(worker_process.answers(workers, valid))
    return [by_worker[worker] for worker in workers]


def _refuse_to_load():
    raise ValueError("this answer cannot be read back")


class _Unreadable:
    """Pickles in the worker; loading it in the parent raises, as a torn pickle does."""

    def __reduce__(self):
        return (_refuse_to_load, ())


def _killed():
    os.kill(os.getpid(), signal.SIGKILL)


def _raises():
    raise RuntimeError("a worker's own failure")


def test_each_worker_answers_its_own_value():
    assert _answers(lambda: ("a", 1), lambda: frozenset({2}), lambda: None) == [("a", 1), frozenset({2}), None]


def test_an_answer_larger_than_a_pipe_comes_back_whole():
    big = bytes(range(256)) * 40_000  # 10 MB: the worker blocks on the full pipe until it is read
    assert _answers(lambda: big) == [big]


def test_a_killed_or_failing_worker_or_an_unreadable_answer_is_none():
    assert _answers(_killed, _raises, _Unreadable, lambda: "fine") == [None, None, None, "fine"]


def test_an_answer_the_caller_refuses_is_none():
    assert _answers(lambda: [1], lambda: "no", valid=lambda answer: isinstance(answer, list)) == [[1], None]


def test_stop_kills_a_worker_that_has_not_finished():
    worker = worker_process.start(lambda: time.sleep(600))
    worker_process.stop(worker)
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)  # killed and reaped: no such child any more
    worker_process.stop(worker)  # a second stop is harmless


def test_no_fork_while_a_second_thread_runs():
    assert worker_process.can_fork()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not worker_process.can_fork()
    finally:
        release.set()
        other.join()
    assert worker_process.can_fork()


_PARENT_WITH_A_STUCK_WORKER = """
import os, sys, time
from bot.parallel import worker_process

marker = sys.argv[1]

def stuck():
    with open(marker + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.rename(marker + ".tmp", marker)
    time.sleep(600)

worker = worker_process.start(stuck)
list(worker_process.answers([worker], lambda answer: True))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_dies_when_its_parent_is_killed(tmp_path):
    marker = tmp_path / "worker-pid"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT_WITH_A_STUCK_WORKER, str(marker)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    worker = 0
    try:
        deadline = time.monotonic() + 30
        while not marker.is_file():
            assert parent.poll() is None and time.monotonic() < deadline, "the worker never started"
            time.sleep(0.02)
        worker = int(marker.read_text())
        assert not gone(worker)
        kill_and_expect_worker_gone(parent, worker)  # SIGKILL: no handler, no `finally` of the parent's runs
    finally:
        leave_nothing_behind(parent, worker)
