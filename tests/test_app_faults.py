"""The App when its store goes away: Redis not there yet, Redis gone later, a full disk.

Real processes: `pr-check serve` and `pr-check worker` (or serve's own worker), a real
redis-server on a spare port that the test starts, stops and starts again, a real SQLite store on
a real filesystem that fills up (a 4 MiB tmpfs), GitHub as the stand-in. What must hold: /healthz
says 503 and why while the store is away or unwritable, deliveries get 503 (GitHub's redelivery
brings them back), the processes live on, every failure is one log line (no traceback), and once
the store is back the next delivery is reviewed.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.standin import GitHubStandIn, app_key_pair, webhook_headers
from tests.test_app_harness import APP_ID, BUCK_DEFECT, OWNER, ROOT, SECRET, make_repo, wait_for


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Service:
    """`pr-check serve` (and a worker) as processes with their logs, and a client for them."""

    def __init__(self, standin: GitHubStandIn, tmp_path: Path, queue_url: str) -> None:
        key = tmp_path / "app.pem"
        key.write_bytes(app_key_pair().private_pem)
        self.tmp_path = tmp_path
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PR_CHECK_WEBHOOK_SECRET": SECRET.decode(),
            "PR_CHECK_APP_ID": str(APP_ID),
            "PR_CHECK_PRIVATE_KEY_FILE": str(key),
            "PR_CHECK_GITHUB_API_URL": standin.base_url,
            "PR_CHECK_DATA_DIR": str(tmp_path / "data"),
            "PR_CHECK_QUEUE": queue_url,
            "PR_CHECK_WRITE_PAUSE_S": "0",
            "PR_CHECK_JOB_LEASE_S": "2",
            "PR_CHECK_MAINTENANCE_INTERVAL_S": "0.5",
            "PR_CHECK_REDELIVERY_INTERVAL_S": "3600",
        }
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []
        self.client = httpx.Client(timeout=10)

    def start(self, name: str, *arguments: str) -> subprocess.Popen:
        with open(self.tmp_path / f"{name}.log", "ab") as log:  # the child holds its own copy
            process = subprocess.Popen(
                [sys.executable, "-m", "pr_check.cli", *arguments],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.processes.append(process)
        return process

    def serve(self, *options: str) -> subprocess.Popen:
        return self.start("serve", "serve", "--host", "127.0.0.1", "--port", str(self.port), *options)

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def health(self) -> httpx.Response | None:
        try:
            return self.client.get(f"{self.url}/healthz", timeout=5)
        except httpx.HTTPError:
            return None

    def health_is(self, status: int) -> dict | None:
        response = self.health()
        return response.json() if response is not None and response.status_code == status else None

    def deliver(self, payload: dict) -> int:
        body = json.dumps(payload).encode()
        headers = webhook_headers(SECRET, body, "pull_request", str(uuid.uuid4()))
        return self.client.post(f"{self.url}/webhook", content=body, headers=headers).status_code

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.client.close()


class RedisServer:
    """A redis-server of the test's own on a fixed port, with its append-only file in `directory`."""

    def __init__(self, port: int, directory: Path) -> None:
        self.port, self.directory = port, directory
        self.process: subprocess.Popen | None = None

    def start(self, appendonly: str = "yes") -> None:
        self.process = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "",
                "--appendonly",
                appendonly,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def _one_line_failures(text: str) -> None:
    assert "Traceback" not in text, text[-3000:]
    assert "cannot rollback" not in text and "During handling of the above exception" not in text


@pytest.mark.redis
def test_serve_and_worker_wait_for_redis_at_start_and_when_it_goes_away(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    redis = RedisServer(port, tmp_path)
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        repo = make_repo(standin, tmp_path, "away")
        first = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        service = Service(standin, tmp_path, f"redis://127.0.0.1:{port}/0?prefix=prc-{uuid.uuid4().hex[:8]}")
        try:
            serve = service.serve("--no-worker")
            worker = service.start("worker", "worker", "--threads", "1")
            # Nothing listens on the port: both processes run, /healthz and deliveries say 503.
            away = wait_for(lambda: service.health_is(503), timeout=60, what="/healthz to answer")
            assert away["status"] == "unavailable" and away["store"] == "unreachable"
            assert f"127.0.0.1:{port}" in away["reason"]
            assert service.deliver(standin.pull_request_payload(OWNER, "away", 1)) == 503
            wait_for(
                lambda: service.log("worker").count("trying again in") >= 2, timeout=30, what="the worker to retry"
            )
            assert serve.poll() is None and worker.poll() is None

            redis.start()
            ok = wait_for(lambda: service.health_is(200), timeout=60, what="/healthz once Redis answers")
            assert ok["status"] == "ok"
            wait_for(
                lambda: service.health_is(200) and service.health_is(200)["workers_alive"] == 1,
                timeout=60,
                what="the worker to report itself alive",
            )
            assert service.deliver(standin.pull_request_payload(OWNER, "away", 1)) == 202
            wait_for(lambda: standin.reviews(OWNER, "away", 1), timeout=60, what="the first review")

            # Redis goes away while both run, and comes back (its append-only file keeps the queue).
            redis.stop()
            gone = wait_for(lambda: service.health_is(503), timeout=30, what="/healthz to see Redis gone")
            assert gone["store"] == "unreachable"
            second = repo.open_pull(2, {"BUCK": BUCK_DEFECT})
            assert service.deliver(standin.pull_request_payload(OWNER, "away", 2)) == 503
            wait_for(
                lambda: "retrying every 0.5 s" in service.log("worker"),
                timeout=30,
                what="the worker to say the queue went away",
            )
            time.sleep(3)  # polls go on meanwhile, silently
            assert serve.poll() is None and worker.poll() is None
            redis.start()
            wait_for(lambda: service.health_is(200), timeout=60, what="/healthz once Redis is back")
            assert service.deliver(standin.pull_request_payload(OWNER, "away", 2)) == 202
            wait_for(
                lambda: [r["commit_id"] for r in standin.reviews(OWNER, "away", 2)] == [second],
                timeout=60,
                what="the review after Redis came back",
            )
            assert [r["commit_id"] for r in standin.reviews(OWNER, "away", 1)] == [first]
        finally:
            service.stop()
            redis.stop()
    worker_log, serve_log = service.log("worker"), service.log("serve")
    _one_line_failures(worker_log)
    _one_line_failures(serve_log)
    # At start: one line per try, with the pause; later: one line for the outage, one when it ends.
    starting = [line for line in worker_log.splitlines() if "trying again in" in line]
    assert len(starting) >= 2 and all("Connection refused" in line or "connecting" in line for line in starting)
    assert worker_log.count("retrying every 0.5 s") == 1 and worker_log.count("the queue answers again") == 1
    refused = [line for line in serve_log.splitlines() if "could not persist delivery" in line]
    assert len(refused) == 2
    assert serve_log.count("/healthz: the store is unreachable") == 2  # each outage, said once


@pytest.mark.redis
def test_a_redis_that_comes_up_without_appendonly_is_refused_once_it_answers(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    from fastapi.testclient import TestClient

    from webhooks.app import create_app
    from webhooks.queue import QueueNotDurable, open_queue
    from webhooks.store import StoreUnavailable

    port = _free_port()
    queue = open_queue(f"redis://127.0.0.1:{port}/0?prefix=prc-{uuid.uuid4().hex[:8]}")  # away: no refusal yet
    redis = RedisServer(port, tmp_path)
    try:
        with pytest.raises(StoreUnavailable, match="Connection refused"):
            queue.ready()
        redis.start(appendonly="no")

        def refused() -> bool:
            try:
                queue.ready()
            except QueueNotDurable:
                return True
            except StoreUnavailable:
                return False
            raise AssertionError("a Redis without appendonly was accepted")

        wait_for(refused, timeout=10, what="Redis to answer")
        with TestClient(create_app(SECRET, queue)) as client:
            health = client.get("/healthz")
            assert health.status_code == 503 and health.json()["store"] == "refused"
            assert "appendonly yes" in health.json()["reason"]
    finally:
        queue.store.close()
        redis.stop()


def _fill(directory: Path) -> Path:
    """Write a file until the filesystem is full (ENOSPC); returns it."""
    filler = directory / "filler"
    with open(filler, "wb") as stream:
        block = b"\0" * (64 << 10)
        try:
            while True:
                stream.write(block)
                stream.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


@pytest.fixture()
def small_disk(tmp_path):
    """A 4 MiB tmpfs: a real filesystem that runs out of space."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_a_full_disk_is_503_and_healthz_says_the_store_is_unwritable(tmp_path, small_disk):
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        repo = make_repo(standin, tmp_path, "full")
        first = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        service = Service(standin, tmp_path, f"sqlite:///{small_disk / 'queue.sqlite3'}")
        try:
            serve = service.serve()  # with its own worker process, as deployed
            wait_for(lambda: service.health_is(200), timeout=60, what="the service to start")
            assert service.deliver(standin.pull_request_payload(OWNER, "full", 1)) == 202
            wait_for(lambda: standin.reviews(OWNER, "full", 1), timeout=60, what="the first review")

            filler = _fill(small_disk)
            full = wait_for(lambda: service.health_is(503), timeout=30, what="/healthz to see the full disk")
            assert full["status"] == "unavailable" and full["store"] == "unwritable"
            assert "database or disk is full" in full["reason"]
            second = repo.open_pull(2, {"BUCK": BUCK_DEFECT})
            payload = standin.pull_request_payload(OWNER, "full", 2)
            assert [service.deliver(payload) for _ in range(3)] == [503, 503, 503]
            time.sleep(2)  # the worker's polls and upkeep meet the full disk too
            assert serve.poll() is None

            filler.unlink()
            wait_for(lambda: service.health_is(200), timeout=30, what="/healthz once there is room")
            assert service.deliver(payload) == 202
            wait_for(
                lambda: [r["commit_id"] for r in standin.reviews(OWNER, "full", 2)] == [second],
                timeout=60,
                what="the review after the disk had room again",
            )
            assert [r["commit_id"] for r in standin.reviews(OWNER, "full", 1)] == [first]
        finally:
            service.stop()
    serve_log = service.log("serve")
    _one_line_failures(serve_log)
    refused = [line for line in serve_log.splitlines() if "could not persist delivery" in line]
    assert len(refused) == 3 and all(line.endswith("database or disk is full") for line in refused)
    assert serve_log.count("/healthz: the store is unwritable") == 1
