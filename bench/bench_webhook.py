"""Webhook acknowledgement latency under load, and delivery-to-review time. Prints numbers only.

    python bench/bench_webhook.py [--deliveries 2000] [--rate 200] [--reviews 5]

1. A real `pr-check serve --no-worker` (uvicorn, SQLite queue) on 127.0.0.1 receives signed
   `pull_request` deliveries at a fixed rate (open loop: a slow answer does not slow the sender);
   each answer's latency is measured from the moment its request was due.
2. A second service with a worker process reviews fixture pull requests on the GitHub stand-in:
   the time from sending `pull_request.opened` to the review being on the stand-in, after one
   warm-up review.
Targets (issue 4): p99 acknowledgement under 50 ms; delivery-to-review under 5 s warm.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.standin import GitHubStandIn, app_key_pair, gitrepos, webhook_headers  # noqa: E402

SECRET = b"bench secret"
APP_ID = 4242
OWNER = "pytorch"
BUCK = """cxx_library(
    name = "shims",
    srcs = ["shims.cpp"],
{extra}    visibility = ["PUBLIC"],
)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(standin: GitHubStandIn, data_dir: Path) -> dict[str, str]:
    key = data_dir / "app.pem"
    key.write_bytes(app_key_pair().private_pem)
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PR_CHECK_WEBHOOK_SECRET": SECRET.decode(),
        "PR_CHECK_APP_ID": str(APP_ID),
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PR_CHECK_GITHUB_API_URL": standin.base_url,
        "PR_CHECK_DATA_DIR": str(data_dir),
        "PR_CHECK_WRITE_PAUSE_S": "0",
    }


def _serve(env: dict[str, str], port: int, *, worker: bool, log: Path) -> subprocess.Popen:
    command = [
        sys.executable,
        "-c",
        "import sys; from webhooks.cli import serve; sys.exit(serve(sys.argv[1:]))",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--worker" if worker else "--no-worker",
    ]
    with open(log, "ab") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the service did not start; see {log}")


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _fixture(standin: GitHubStandIn, root: Path, name: str, pulls: int) -> list[dict]:
    """A bare repository with `pulls` pull requests each adding a defect; their opened payloads."""
    path = root / f"{name}.git"
    base = gitrepos.make_bare_repo(
        path,
        {
            ".buckconfig": "[repositories]\n root = .\n",
            "BUCK": BUCK.format(extra=""),
            "shims.cpp": "int shim() { return 1; }\n",
        },
    )
    standin.add_repo(OWNER, name, bare_git_path=str(path), permissions={"alice": "read"})
    payloads = []
    for number in range(1, pulls + 1):
        head = gitrepos.commit(
            path,
            {"BUCK": BUCK.format(extra="    link_whole = True,\n"), f"notes/{number}.txt": f"{number}\n"},
            parent=base,
        )
        gitrepos.set_pull_ref(path, number, head)
        standin.add_pull(OWNER, name, number, head, base, f"f{number}", "main", "alice", "CONTRIBUTOR")
        payloads.append(standin.pull_request_payload(OWNER, name, number, "opened"))
    return payloads


async def _load(url: str, body: bytes, count: int, rate: float) -> tuple[list[float], dict[int, int]]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:
        start = time.perf_counter() + 0.2

        async def one(index: int) -> None:
            due = start + index / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            headers = webhook_headers(SECRET, body, "pull_request", str(uuid.uuid4()))
            response = await client.post(url, content=body, headers=headers)
            latencies.append(time.perf_counter() - due)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        await asyncio.gather(*(one(i) for i in range(count)))
    return latencies, statuses


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def bench_ack(deliveries: int, rate: float) -> None:
    with tempfile.TemporaryDirectory() as scratch, GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        root = Path(scratch)
        [payload] = _fixture(standin, root, "ack", 1)
        body = json.dumps(payload).encode()
        (root / "data").mkdir()
        port = _free_port()
        service = _serve(_environment(standin, root / "data"), port, worker=False, log=root / "serve.log")
        try:
            # Warm the connection pool and the service's first-request paths.
            asyncio.run(_load(f"http://127.0.0.1:{port}/webhook", body, 50, 200))
            latencies, statuses = asyncio.run(_load(f"http://127.0.0.1:{port}/webhook", body, deliveries, rate))
            served = _service_side_buckets(httpx.get(f"http://127.0.0.1:{port}/metrics").text)
        finally:
            _stop(service)
    ms = [value * 1000 for value in latencies]
    print(
        f"webhook ack: {deliveries} signed deliveries ({len(body):,} bytes each) at {rate:g}/s "
        f"to uvicorn on 127.0.0.1 (SQLite queue)"
    )
    print(f"  statuses {dict(sorted(statuses.items()))}")
    print(
        f"  p50 {_percentile(ms, 0.50):.1f} ms   p90 {_percentile(ms, 0.90):.1f} ms   "
        f"p99 {_percentile(ms, 0.99):.1f} ms   max {max(ms):.1f} ms   (target p99 < 50 ms)"
    )
    print(
        "  inside the service (its own histogram, warm-up included): "
        + "   ".join(f"<= {bound * 1000:g} ms {share:.1%}" for bound, share in served)
    )


def _service_side_buckets(text: str) -> list[tuple[float, float]]:
    """Share of acknowledgements under each bucket bound of pr_check_webhook_ack_seconds."""
    counts = {}
    for line in text.splitlines():
        if line.startswith("pr_check_webhook_ack_seconds_bucket"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            counts[bound] = float(line.rsplit(" ", 1)[1])
    total = counts.get("+Inf", 0.0) or 1.0
    return [
        (float(bound), count / total)
        for bound, count in counts.items()
        if bound != "+Inf" and 0.001 < float(bound) <= 0.05
    ]


def bench_review(reviews: int) -> None:
    with tempfile.TemporaryDirectory() as scratch, GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        root = Path(scratch)
        payloads = _fixture(standin, root, "review", reviews + 1)
        (root / "data").mkdir()
        port = _free_port()
        service = _serve(_environment(standin, root / "data"), port, worker=True, log=root / "serve.log")
        times = []
        try:
            with httpx.Client(timeout=10) as client:
                for index, payload in enumerate(payloads):
                    body = json.dumps(payload).encode()
                    number = payload["number"]
                    started = time.perf_counter()
                    client.post(
                        f"http://127.0.0.1:{port}/webhook",
                        content=body,
                        headers=webhook_headers(SECRET, body, "pull_request"),
                    )
                    deadline = started + 60
                    while not standin.reviews(OWNER, "review", number):
                        if time.perf_counter() > deadline:
                            raise RuntimeError(f"no review for #{number}; see {root / 'serve.log'}")
                        time.sleep(0.01)
                    if index > 0:  # the first one warms the worker (imports, mirror, token)
                        times.append(time.perf_counter() - started)
        finally:
            _stop(service)
    print(f"delivery-to-review: {len(times)} fixture pull requests, warm worker (SQLite queue), one at a time")
    print(f"  median {statistics.median(times):.2f} s   max {max(times):.2f} s   (target < 5 s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--reviews", type=int, default=5)
    args = parser.parse_args(argv)
    bench_ack(args.deliveries, args.rate)
    bench_review(args.reviews)
    return 0


if __name__ == "__main__":
    sys.exit(main())
