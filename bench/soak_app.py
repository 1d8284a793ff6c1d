"""A bounded loopback soak of the App: steady deliveries with duplicates, bursts and poison pushes.

    python bench/soak_app.py [--seconds 180] [--rate 5] [--pulls 24] [--out bench/out]

A real `pr-check serve` (uvicorn, SQLite queue, its supervised worker process) on 127.0.0.1, the GitHub
stand-in, real bare git repositories. For `--seconds`, signed deliveries are sent open loop at `--rate`
per second (a slow answer never slows the sender): mostly pushes to one of `--pulls` pull requests,
with redeliveries of earlier GUIDs (duplicates), events that need no work, a burst of 60 deliveries
every 30 s, and every 20 s a push of a poison BUCK (a list nested 5,000 deep, which segfaults the
Starlark interpreter). Then it waits for the queue to drain and checks every pull request's last head:

- reviews lost: pull requests whose last head has no completed `pr-check` check run (must be 0);
- poison pushes: their check runs must be failed, with the reason;
- throughput (deliveries/s acknowledged, reviews/s completed), p50/p99 acknowledgement;
- queue depth (jobs waiting or running, from /healthz) and RSS of serve and worker, sampled each second;
  RSS growth is the last sample against the one after the warm-up (the first 20% of the run).

Writes `soak_app.png` (queue depth, acknowledgement latency, RSS over time) and `soak_app.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.standin import GitHubStandIn, app_key_pair, gitrepos, webhook_headers  # noqa: E402

SECRET = b"soak secret"
APP_ID = 4242
OWNER = "pytorch"
REPO = "soak"
BUCK = 'cxx_library(\n    name = "shims",\n    srcs = ["shims.cpp"],\n{extra}    visibility = ["PUBLIC"],\n)\n'
POISON = "X = " + "[" * 5000 + "]" * 5000 + "\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


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


class Soak:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
        self.path = work / f"{REPO}.git"
        self.base = gitrepos.make_bare_repo(
            self.path,
            {
                ".buckconfig": "[repositories]\n root = .\n",
                "BUCK": BUCK.format(extra=""),
                "shims.cpp": "int s() { return 1; }\n",
            },
        )
        self.standin.add_repo(OWNER, REPO, bare_git_path=str(self.path), permissions={"alice": "read"})
        self.heads: dict[int, str] = {}  # pull request -> its last head
        self.poison_heads: list[str] = []  # every poison push
        self.sent: list[tuple[str, bytes, str]] = []  # (event, body, guid) for redelivery
        self.acks: list[tuple[float, float, int]] = []  # (time sent, seconds, status)
        self.samples: list[dict] = []
        self.lock = threading.Lock()
        self.pushes = 0
        self.rng = random.Random(12)

    # -- the fixture ---------------------------------------------------------------------------
    def open_pulls(self) -> None:
        for number in range(1, self.args.pulls + 1):
            head = gitrepos.commit(
                self.path,
                {"BUCK": BUCK.format(extra="    link_whole = True,\n"), f"notes/{number}.txt": "0\n"},
                parent=self.base,
            )
            gitrepos.set_pull_ref(self.path, number, head)
            self.standin.add_pull(OWNER, REPO, number, head, self.base, f"f{number}", "main", "alice", "CONTRIBUTOR")
            self.heads[number] = head

    def push(self, number: int, poison: bool = False) -> tuple[str, bytes]:
        self.pushes += 1
        files = {
            f"notes/{number}.txt": f"{self.pushes}\n",
            "BUCK": POISON if poison else BUCK.format(extra="    link_whole = True,\n"),
        }
        head = gitrepos.commit(self.path, files, parent=self.heads[number])
        gitrepos.set_pull_ref(self.path, number, head)
        payload = self.standin.update_pull_head(OWNER, REPO, number, head)
        self.heads[number] = head
        if poison:
            self.poison_heads.append(head)
        return "pull_request", json.dumps(payload).encode()

    # -- the service -----------------------------------------------------------------------------
    def start_service(self) -> None:
        key = self.work / "app.pem"
        key.write_bytes(app_key_pair().private_pem)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PR_CHECK_WEBHOOK_SECRET": SECRET.decode(),
            "PR_CHECK_APP_ID": str(APP_ID),
            "PR_CHECK_PRIVATE_KEY_FILE": str(key),
            "PR_CHECK_GITHUB_API_URL": self.standin.base_url,
            "PR_CHECK_DATA_DIR": str(self.work / "data"),
            "PR_CHECK_WRITE_PAUSE_S": "0",
            "PR_CHECK_MAINTENANCE_INTERVAL_S": "1",
        }
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(self.work / "serve.log", "wb")  # noqa: SIM115 - held open for the run; stop() closes it
        self.serve = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from webhooks.cli import serve; sys.exit(serve(sys.argv[1:]))",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            env=env,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200 and _children(self.serve.pid):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the service did not start; see {self.work / 'serve.log'}")

    def stop_service(self) -> None:
        self.serve.send_signal(signal.SIGTERM)
        try:
            self.serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.serve.kill()
        self.log.close()
        self.standin.stop()

    # -- sending and sampling ----------------------------------------------------------------------
    def send(self, client: httpx.Client, event: str, body: bytes, guid: str, started: float) -> None:
        due = time.perf_counter()
        try:
            status = client.post(
                f"{self.url}/webhook", content=body, headers=webhook_headers(SECRET, body, event, guid)
            ).status_code
        except httpx.HTTPError:
            status = 0
        with self.lock:
            self.acks.append((due - started, time.perf_counter() - due, status))

    def next_delivery(self) -> tuple[str, bytes, str]:
        roll = self.rng.random()
        if roll < 0.25 and self.sent:
            return self.rng.choice(self.sent)  # a redelivery: same GUID
        if roll < 0.40:
            body = json.dumps({"zen": "soak", "hook_id": 1}).encode()
            return "ping", body, str(uuid.uuid4())
        event, body = self.push(self.rng.randint(1, self.args.pulls))
        delivery = (event, body, str(uuid.uuid4()))
        self.sent.append(delivery)
        return delivery

    def sample(self, started: float, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            try:
                health = httpx.get(f"{self.url}/healthz", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                health = {}
            workers = _children(self.serve.pid)
            # The worker and the server its review children fork from (not the short-lived children).
            worker_rss = sum(_rss_kib(pid) for worker in workers for pid in [worker, *_children(worker)])
            self.samples.append(
                {
                    "t": time.perf_counter() - started,
                    "depth": health.get("jobs_active", -1),
                    "oldest": health.get("oldest_job_age_s", -1),
                    "serve_kib": _rss_kib(self.serve.pid),
                    "worker_kib": worker_rss,
                    "workers": len(workers),
                }
            )

    def run(self) -> dict:
        args = self.args
        self.open_pulls()
        self.start_service()
        for number in self.heads:  # every pull request opened once
            body = json.dumps(self.standin.pull_request_payload(OWNER, REPO, number, "opened")).encode()
            self.sent.append(("pull_request", body, str(uuid.uuid4())))
        started = time.perf_counter()
        stop = threading.Event()
        sampler = threading.Thread(target=self.sample, args=(started, stop), daemon=True)
        sampler.start()
        client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
        with ThreadPoolExecutor(32) as pool:
            for event, body, guid in list(self.sent):
                pool.submit(self.send, client, event, body, guid, started)
            index, next_burst, next_poison = 0, 30.0, 20.0
            while (now := time.perf_counter() - started) < args.seconds:
                due = index / args.rate
                if due > now:
                    time.sleep(min(due - now, 0.05))
                    continue
                index += 1
                deliveries = [self.next_delivery()]
                if now >= next_burst:
                    next_burst += 30.0
                    deliveries += [self.next_delivery() for _ in range(60)]
                if now >= next_poison:
                    next_poison += 20.0
                    event, body = self.push(self.rng.randint(1, args.pulls), poison=True)
                    deliveries.append((event, body, str(uuid.uuid4())))
                for event, body, guid in deliveries:
                    pool.submit(self.send, client, event, body, guid, started)
        sent_for = time.perf_counter() - started
        drain_started = time.perf_counter()
        while time.perf_counter() - drain_started < args.drain:
            if self.samples and self.samples[-1]["depth"] == 0 and self._lost() == []:
                break
            time.sleep(1.0)
        drained_after = time.perf_counter() - drain_started
        stop.set()
        sampler.join()
        client.close()
        return self._figures(sent_for, drained_after)

    def _completed(self, head: str) -> list[dict]:
        return [
            r
            for r in self.standin.check_runs(OWNER, REPO, head)
            if r["name"] == "pr-check" and r["status"] == "completed"
        ]

    def _lost(self) -> list[int]:
        return [number for number, head in self.heads.items() if not self._completed(head)]

    def _figures(self, sent_for: float, drained_after: float) -> dict:
        latencies = sorted(seconds for _, seconds, status in self.acks if status)
        statuses: dict[int, int] = {}
        for _, _, status in self.acks:
            statuses[status] = statuses.get(status, 0) + 1
        reviews = [
            r for r in self.standin.check_runs(OWNER, REPO) if r["name"] == "pr-check" and r["status"] == "completed"
        ]
        poison_runs = [run for head in self.poison_heads for run in self._completed(head)]
        warm = [s for s in self.samples if s["t"] >= 0.2 * sent_for]
        first, last = (warm[0], self.samples[-1]) if warm else ({}, {})
        return {
            "seconds_sending": round(sent_for, 1),
            "seconds_to_drain": round(drained_after, 1),
            "deliveries": len(self.acks),
            "statuses": statuses,
            "deliveries_per_s": round(len(self.acks) / sent_for, 2),
            "reviews_completed": len(reviews),
            "reviews_per_s": round(len(reviews) / (sent_for + drained_after), 2),
            "ack_p50_ms": round(1000 * statistics.median(latencies), 1),
            "ack_p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1),
            "ack_max_ms": round(1000 * latencies[-1], 1),
            "max_queue_depth": max(s["depth"] for s in self.samples),
            "pulls": len(self.heads),
            "reviews_lost": len(self._lost()),
            "poison_pushes": len(self.poison_heads),
            "poison_reviewed": len(poison_runs),
            "poison_checks_failed": sum(1 for r in poison_runs if r["conclusion"] == "failure"),
            "serve_rss_mib": [round(first.get("serve_kib", 0) / 1024, 1), round(last.get("serve_kib", 0) / 1024, 1)],
            "worker_rss_mib": [round(first.get("worker_kib", 0) / 1024, 1), round(last.get("worker_kib", 0) / 1024, 1)],
            "worker_processes_seen": sorted({s["workers"] for s in self.samples}),
            "samples": self.samples,
            "acks": self.acks,
        }


def plot(figures: dict, target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples, acks = figures["samples"], figures["acks"]
    fig, (depth, ack, rss) = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    depth.plot([s["t"] for s in samples], [s["depth"] for s in samples], color="tab:blue")
    depth.set_ylabel("jobs queued or running")
    depth.set_title(
        f"pr-check soak: {figures['deliveries']} deliveries, {figures['reviews_completed']} reviews, "
        f"{figures['reviews_lost']} lost"
    )
    ack.scatter([a[0] for a in acks], [1000 * a[1] for a in acks], s=3, color="tab:orange")
    ack.set_ylabel("acknowledgement (ms)")
    ack.set_yscale("log")
    ack.axhline(figures["ack_p99_ms"], color="tab:red", linewidth=0.8, label=f"p99 {figures['ack_p99_ms']} ms")
    ack.legend(loc="upper right")
    rss.plot([s["t"] for s in samples], [s["serve_kib"] / 1024 for s in samples], label="serve")
    rss.plot([s["t"] for s in samples], [s["worker_kib"] / 1024 for s in samples], label="worker")
    rss.set_ylabel("RSS (MiB)")
    rss.set_xlabel("seconds")
    rss.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(target, dpi=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--rate", type=float, default=5.0, help="deliveries per second, bursts aside")
    parser.add_argument("--pulls", type=int, default=24)
    parser.add_argument("--drain", type=float, default=300.0, help="longest wait for the queue to drain")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pr-check-soak-") as scratch:
        soak = Soak(args, Path(scratch))
        try:
            figures = soak.run()
        finally:
            soak.stop_service()
    plot(figures, args.out / "soak_app.png")
    summary = {k: v for k, v in figures.items() if k not in ("samples", "acks")}
    (args.out / "soak_app.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(summary, indent=1))
    return 0 if figures["reviews_lost"] == 0 and figures["poison_checks_failed"] == figures["poison_reviewed"] else 1


if __name__ == "__main__":
    sys.exit(main())
