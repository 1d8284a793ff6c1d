"""Shared pieces of the App's end-to-end tests (no tests here).

The App runs for real: the webhook service is uvicorn on a loopback socket (in a thread of the test
process), workers are `python -m webhooks.worker` subprocesses, GitHub is the stand-in, and the
repositories are real bare git repositories. Nothing of the App is replaced.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tests.standin import GitHubStandIn, app_key_pair, gitrepos, webhook_headers
from webhooks.app import create_app
from webhooks.metrics import WORKERS_NAMESPACE
from webhooks.queue import JobQueue, open_queue

ROOT = Path(__file__).resolve().parent.parent
SECRET = b"test webhook secret"
APP_ID = 4242
OWNER = "pytorch"

BUCKCONFIG = "[repositories]\n root = .\n"
BUCK_CLEAN = """cxx_library(
    name = "shims",
    srcs = ["shims.cpp"],
    visibility = ["PUBLIC"],
)
cxx_python_extension(name = "_shims", deps = [":shims"])
"""
# link_whole without supports_python_dlopen: rule link-whole-without-python-dlopen at line 4.
BUCK_DEFECT = BUCK_CLEAN.replace('    srcs = ["shims.cpp"],\n', '    srcs = ["shims.cpp"],\n    link_whole = True,\n')
DEFECT_LINE = 4
# The same defect two lines further down: only the line numbers move.
BUCK_SHIFTED = "# Shims for the CUDA backend.\n# Keep the list sorted.\n" + BUCK_DEFECT
SHIFTED_LINE = 6
BUCK_FIXED = BUCK_SHIFTED.replace(
    "    link_whole = True,\n", "    link_whole = True,\n    supports_python_dlopen = True,\n"
)
RULE = "link-whole-without-python-dlopen"
# A worker's start-up (imports of the App stack, the review children's server) has nothing measured
# before it to derive a limit from: this one only catches a worker that never comes up.
STARTUP_LIMIT_S = 120.0
# The App's tests follow one minor finding through its life, so the repository posts minors inline.
BASE_FILES = {
    ".buckconfig": BUCKCONFIG,
    "BUCK": BUCK_CLEAN,
    "shims.cpp": "int shim() { return 1; }\n",
    ".github/pr-check.toml": '[review]\ninline_level = "minor"\n',
}


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "") -> Any:
    """Poll until `predicate()` is truthy; return its value, or fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


def deadline_from(measured_s: float, *, factor: float = 5.0, floor_s: float = 30.0) -> float:
    """A wait's limit derived from a phase this run measured (a worker's start-up and first steps,
    say): on a loaded machine every phase slows alike, so the limit grows with the load instead of
    being a guess that load defeats; the floor keeps it generous on a quiet machine."""
    return max(floor_s, factor * measured_s)


@dataclass
class FixtureRepo:
    """A real bare repository registered with the stand-in."""

    standin: GitHubStandIn
    owner: str
    name: str
    path: Path
    base: str

    def open_pull(self, number: int, files: dict, *, author: str = "alice", association: str = "CONTRIBUTOR") -> str:
        head = gitrepos.commit(self.path, files, parent=self.base, message=f"PR {number}")
        gitrepos.set_pull_ref(self.path, number, head)
        self.standin.add_pull(
            self.owner, self.name, number, head, self.base, f"feature-{number}", "main", author, association
        )
        return head

    def push(self, number: int, files: dict, parent: str) -> tuple[str, dict]:
        """A new head on top of `parent`; returns it and the synchronize payload."""
        head = gitrepos.commit(
            self.path, files, parent=parent, branch=f"feature-{number}", message=f"PR {number} update"
        )
        gitrepos.set_pull_ref(self.path, number, head)
        return head, self.standin.update_pull_head(self.owner, self.name, number, head)


def make_repo(standin: GitHubStandIn, tmp: Path, name: str, permissions: dict[str, str] | None = None) -> FixtureRepo:
    path = tmp / f"{name}.git"
    base = gitrepos.make_bare_repo(path, BASE_FILES)
    standin.add_repo(
        OWNER,
        name,
        bare_git_path=str(path),
        permissions=permissions or {"alice": "read", "maria": "write", "mallory": "read"},
    )
    return FixtureRepo(standin, OWNER, name, path, base)


@dataclass
class RunningApp:
    """The webhook service and its workers, wired to a stand-in."""

    standin: GitHubStandIn
    data_dir: Path
    queue_url: str
    env: dict[str, str]
    queue: JobQueue
    url: str
    _server: uvicorn.Server
    _thread: threading.Thread
    workers: list[subprocess.Popen] = field(default_factory=list)
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10))

    def deliver(
        self, event: str, payload: dict | bytes, *, delivery_id: str | None = None, secret: bytes = SECRET
    ) -> httpx.Response:
        import json

        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.client.post(
            f"{self.url}/webhook",
            content=body,
            headers=webhook_headers(secret, body, event, delivery_id or str(uuid.uuid4())),
        )

    def start_worker(self, entry: tuple[str, ...] = ("webhooks.worker",), **extra_env: str) -> subprocess.Popen:
        """Start a worker and return once it says it is alive (the row /healthz counts), which it
        writes after its imports and warm-up, just before it takes jobs: the start-up, the phase a
        loaded machine slows most, is then inside no test's wait on the work itself. `entry` is the
        module run (and its first arguments): tests.app_faults starts one whose review children misbehave."""
        with open(self.data_dir / f"worker-{len(self.workers)}.log", "ab") as log:  # the child holds its own copy
            process = subprocess.Popen(
                [sys.executable, "-m", *entry, "--threads", "2"],
                env={**self.env, **extra_env},
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.workers.append(process)
        name = f"{socket.gethostname()}:{process.pid}"  # webhooks.worker.worker_name() of that process

        def alive() -> bool:
            if process.poll() is not None:
                raise AssertionError(
                    f"the worker exited with {process.returncode} while starting:\n{self.worker_log()}"
                )
            return self.queue.store.get(WORKERS_NAMESPACE, name) is not None

        wait_for(alive, timeout=STARTUP_LIMIT_S, what="the worker to start")
        return process

    def worker_log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.data_dir.glob("worker-*.log")))

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.client.close()
        self.queue.store.close()


def start_app(
    standin: GitHubStandIn, data_dir: Path, *, queue_url: str | None = None, stalled_after_s: float = 300.0, **env: str
) -> RunningApp:
    """Serve the webhook endpoint on 127.0.0.1 and prepare the environment workers start with."""
    data_dir.mkdir(parents=True, exist_ok=True)
    key_file = data_dir / "app.pem"
    key_file.write_bytes(app_key_pair().private_pem)
    queue_url = queue_url or f"sqlite:///{data_dir / 'queue.sqlite3'}"
    worker_env = {
        **os.environ,
        "PR_CHECK_WEBHOOK_SECRET": SECRET.decode(),
        "PR_CHECK_APP_ID": str(APP_ID),
        "PR_CHECK_PRIVATE_KEY_FILE": str(key_file),
        "PR_CHECK_GITHUB_API_URL": standin.base_url,
        "PR_CHECK_DATA_DIR": str(data_dir),
        "PR_CHECK_QUEUE": queue_url,
        "PR_CHECK_WRITE_PAUSE_S": "0",
        "PR_CHECK_JOB_LEASE_S": "2",
        "PR_CHECK_MAINTENANCE_INTERVAL_S": "0.3",
        "PR_CHECK_REDELIVERY_INTERVAL_S": "3600",
        "PYTHONPATH": str(ROOT),
        # The shared test Redis runs without appendonly; durability is not what these tests show.
        "PR_CHECK_ALLOW_VOLATILE_REDIS": "1",
        **env,
    }
    queue = open_queue(queue_url, lease_s=2, allow_volatile_redis=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(SECRET, queue, stalled_after_s=stalled_after_s),
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="webhook-service")
    thread.start()
    wait_for(lambda: server.started, timeout=10, what="uvicorn to start")
    return RunningApp(standin, data_dir, queue_url, worker_env, queue, f"http://127.0.0.1:{port}", server, thread)


def completed_check_runs(
    standin: GitHubStandIn, name: str, repo: str, head: str, check_name: str = "pr-check"
) -> list[dict]:
    return [
        run
        for run in standin.check_runs(OWNER, repo, head)
        if run["name"] == check_name and run["status"] == "completed"
    ]


@contextlib.contextmanager
def running_app(
    data_dir: Path,
    *,
    run_details: bool = True,
    installation_permissions: dict[str, str] | None = None,
    **environment: str,
) -> Iterator[RunningApp]:
    """A stand-in GitHub and the App with one worker, stopped (both) on the way out."""
    standin = GitHubStandIn(
        APP_ID, app_key_pair().public_pem, run_details=run_details, installation_permissions=installation_permissions
    ).start()
    app = start_app(standin, data_dir, **environment)
    app.start_worker()
    try:
        yield app
    finally:
        app.stop()
        standin.stop()
