"""`pr-check serve` and `pr-check worker`, called by pr_check/cli.py with the remaining arguments."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
from urllib.parse import urlparse

from bot.errors import PrCheckError
from webhooks.settings import SettingsError, load_settings


def serve(argv: list[str]) -> int:
    """Run the webhook service; with a SQLite queue, a worker process runs beside it by default."""
    parser = argparse.ArgumentParser(prog="pr-check serve", description="Receive GitHub webhooks and queue reviews.")
    parser.add_argument("--host", default=os.environ.get("PR_CHECK_HOST", "0.0.0.0"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--worker",
        dest="embedded_worker",
        action="store_true",
        default=None,
        help="also run a worker process (the default with a SQLite queue)",
    )
    group.add_argument(
        "--no-worker",
        dest="embedded_worker",
        action="store_false",
        help="only receive webhooks (run `pr-check worker` elsewhere)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"pr-check serve: {error}", file=sys.stderr)
        return error.exit_code

    import uvicorn

    from webhooks.app import create_app
    from webhooks.queue import open_queue

    try:
        queue = open_queue(
            settings.queue_url, lease_s=settings.job_lease_s, allow_volatile_redis=settings.allow_volatile_redis
        )
    except PrCheckError as error:
        print(f"pr-check serve: {error}", file=sys.stderr)
        return error.exit_code
    app = create_app(settings.webhook_secret, queue)
    embedded = args.embedded_worker
    if embedded is None:
        embedded = urlparse(settings.queue_url).scheme == "sqlite"
    supervisor = WorkerSupervisor() if embedded else None
    if supervisor is not None:
        supervisor.start()
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)
    finally:
        if supervisor is not None:
            supervisor.stop()
    return 0


class WorkerSupervisor:
    """The embedded worker process, started again whenever it dies (with a growing pause).

    A separate process, so that reviews (CPU-bound) never delay a webhook's acknowledgement; and
    supervised, so that a worker that dies (whatever killed it) never leaves `serve` accepting
    work that nobody does.
    """

    def __init__(self, command: list[str] | None = None, max_pause_s: float = 30.0) -> None:
        self.command = command or [sys.executable, "-m", "webhooks.worker", "--exit-with-parent"]
        self.max_pause_s = max_pause_s
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="worker-supervisor")

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, preexec_fn=_stop_with_parent)
        self._thread.start()

    def _watch(self) -> None:
        log = logging.getLogger("pr_check.serve")
        pause = 1.0
        while not self._stopping.is_set():
            process = self.process
            code = process.wait() if process is not None else None
            if self._stopping.is_set():
                return
            log.error("the worker process exited with status %s; starting it again in %.0f s", code, pause)
            if self._stopping.wait(pause):
                return
            pause = min(pause * 2, self.max_pause_s)
            self.restarts += 1
            self.process = subprocess.Popen(self.command, preexec_fn=_stop_with_parent)

    def stop(self) -> None:
        self._stopping.set()
        process = self.process
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _stop_with_parent() -> None:
    """In the embedded worker: have Linux send SIGTERM (finish jobs, then stop) when serve dies.

    uvicorn re-raises the signal that stopped it, so serve may die without running `finally`.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the worker's own parent check stops it


def worker(argv: list[str]) -> int:
    """Run a queue worker."""
    from webhooks.worker import main

    return main(argv)
