"""Forked worker processes: a function's answer computed in a child and pickled back over a pipe.

Both pools (bot/parallel/evaluation_pool.py: a cold cell's packages; bot/parallel/check_split.py: a share of a
review's checks) fork the reviewing process, so a worker starts with everything derived so far
and sends back frozen values. What keeps that safe where the review is itself a child process
that its parent SIGKILLs at the deadline (the App, webhooks/isolation.py):
- a worker asks Linux to SIGKILL it when its parent dies (PR_SET_PDEATHSIG), and leaves at once if
  the parent died before it asked: no orphan goes on computing, holding the review's result pipe
  open or its memory. Linux sends the signal when the forking *thread* ends, which is why workers
  are forked from the main thread only;
- forks happen only while no other thread runs (`can_fork`): a lock another thread held at the
  fork would stay held for ever in the worker. The main thread holds none where it forks: the
  fact cache and store (bot/store/memo.py) and the repository (bot/repo.py) take theirs only
  around a dictionary update or a pipe exchange, never around a computation;
- a worker leaves through `os._exit`: it never runs the parent's exit handlers nor flushes the
  parent's buffers a second time;
- an answer that does not arrive whole (the worker died, was killed, or sent a torn pickle) is
  None: the caller then does the work itself, so a lost worker costs time, never a result.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import selectors
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Worker:
    """A forked worker: its process id, the read end of its answer pipe, and what arrived so far."""

    def __init__(self, pid: int, read_end: int) -> None:
        self.pid = pid
        self.read_end = read_end
        self.chunks: list[bytes] = []
        self.finished = False  # read to the end and waited for


def can_fork() -> bool:
    """Can this process fork a worker now: the platform forks, and this is the main thread with no
    other thread alive (one holding a lock at the fork would leave it held in the worker)?"""
    return (
        hasattr(os, "fork") and threading.current_thread() is threading.main_thread() and threading.active_count() == 1
    )


def die_with_parent(parent: int) -> None:
    """In a freshly forked worker: be SIGKILLed when the parent dies; leave now if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent still kills its workers when interrupted (`stop`)
    if os.getppid() != parent:  # it died between the fork and the prctl: nobody will read the answer
        os._exit(1)


def start(work: Callable[[], Any]) -> Worker:
    """Fork a worker that computes `work()` and sends it back pickled; the parent returns at once.
    OSError when no worker can be forked."""
    parent = os.getpid()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (a process or memory limit): the caller works alone
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the worker: compute, write, and leave without running the parent's exit handlers
        status = 1
        try:
            die_with_parent(parent)
            os.close(read_end)
            data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return Worker(pid, read_end)


def answers(workers: Iterable[Worker], valid: Callable[[Any], bool]) -> Iterator[tuple[Worker, Any]]:
    """(worker, its answer, or None when it failed or `valid` refuses it), as the workers finish.
    Leaving early (an exception, or the caller stops iterating) kills those not finished."""
    pending = {worker.read_end: worker for worker in workers}
    selector = selectors.DefaultSelector()
    try:
        for read_end in pending:
            selector.register(read_end, selectors.EVENT_READ)
        while pending:  # read every pipe as it fills: a worker blocks on a full pipe until then
            for key, _events in selector.select():
                worker = pending[key.fd]
                chunk = os.read(key.fd, 1 << 20)
                if chunk:
                    worker.chunks.append(chunk)
                    continue
                selector.unregister(key.fd)
                del pending[key.fd]
                yield worker, _finish(worker, valid)
    finally:
        for worker in pending.values():
            stop(worker)
        selector.close()


def stop(worker: Worker) -> None:
    """Kill a worker not yet finished and wait for it (an interrupted caller leaves none behind)."""
    if worker.finished:
        return
    worker.finished = True
    os.close(worker.read_end)
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)
    os.waitpid(worker.pid, 0)


def _finish(worker: Worker, valid: Callable[[Any], bool]) -> Any:
    worker.finished = True
    os.close(worker.read_end)
    _pid, status = os.waitpid(worker.pid, 0)
    if status != 0:
        return None
    try:
        answer = pickle.loads(b"".join(worker.chunks))
    except Exception:  # noqa: BLE001 - a torn answer is a failed worker
        return None
    finally:
        worker.chunks.clear()
    return answer if valid(answer) else None
