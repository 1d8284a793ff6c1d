"""`pr-check serve` as deployed: one command, SQLite queue, its own worker process beside it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.standin import GitHubStandIn, app_key_pair, webhook_headers
from tests.test_app_harness import APP_ID, BUCK_DEFECT, OWNER, ROOT, SECRET, make_repo, wait_for


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_serve(standin, tmp_path):
    """`pr-check serve` as a process against the stand-in: (process, port, its open log file)."""
    key = tmp_path / "app.pem"
    key.write_bytes(app_key_pair().private_pem)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PR_CHECK_WEBHOOK_SECRET": SECRET.decode(),
        "PR_CHECK_APP_ID": str(APP_ID),
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PR_CHECK_GITHUB_API_URL": standin.base_url,
        "PR_CHECK_DATA_DIR": str(tmp_path / "data"),
        "PR_CHECK_WRITE_PAUSE_S": "0",
    }
    port = _free_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - returned open; the caller closes it
    serve = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pr_check.cli import main; sys.exit(main())",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return serve, port, log


def test_serve_receives_reviews_and_stops_its_worker(tmp_path):
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        repo = make_repo(standin, tmp_path, "served")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        serve, port, log = _start_serve(standin, tmp_path)
        try:
            url = f"http://127.0.0.1:{port}"

            def healthy() -> bool:
                try:
                    return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_for(healthy, timeout=30, what="the service to answer")
            body = json.dumps(standin.pull_request_payload(OWNER, "served", 1)).encode()
            response = httpx.post(f"{url}/webhook", content=body, headers=webhook_headers(SECRET, body, "pull_request"))
            assert response.status_code == 202
            wait_for(lambda: standin.reviews(OWNER, "served", 1), timeout=30, what="the review")
            assert [r["commit_id"] for r in standin.reviews(OWNER, "served", 1)] == [head]
            children = _children(serve.pid)
            assert len(children) == 1  # the worker
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            log.close()
        wait_for(lambda: not any(_alive(pid) for pid in children), timeout=10, what="the worker to stop")
        assert SECRET.decode() not in (tmp_path / "serve.log").read_text()


def test_serve_starts_its_worker_again_when_it_dies(tmp_path):
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        repo = make_repo(standin, tmp_path, "revived")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        serve, port, log = _start_serve(standin, tmp_path)
        try:
            [first] = wait_for(lambda: _children(serve.pid), timeout=30, what="the worker")
            os.kill(first, signal.SIGKILL)  # whatever killed it, serve must not go on without a worker
            [_second] = wait_for(
                lambda: [pid for pid in _children(serve.pid) if pid != first and _alive(pid)],
                timeout=30,
                what="a new worker",
            )
            url = f"http://127.0.0.1:{port}"
            wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, timeout=30, what="serve")
            body = json.dumps(standin.pull_request_payload(OWNER, "revived", 1)).encode()
            assert (
                httpx.post(
                    f"{url}/webhook", content=body, headers=webhook_headers(SECRET, body, "pull_request")
                ).status_code
                == 202
            )
            wait_for(lambda: standin.reviews(OWNER, "revived", 1), timeout=60, what="the review by the new worker")
            assert [r["commit_id"] for r in standin.reviews(OWNER, "revived", 1)] == [head]
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
            log.close()
        assert "starting it again" in (tmp_path / "serve.log").read_text()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
