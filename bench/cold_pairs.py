"""Cold reviews of new heads, two versions of the code side by side under the same load.

    python -m bench.cold_pairs --repo CLONE --before DIR [--after DIR] [--first 5 --count 12] [--out FILE]

Each version is one long-lived process (as `bench.busy_day` reviews: commits in a row, one store,
the checks imported before the clock starts) with a fresh store of its own; the two are fed the
same commits alternately, commit by commit (which version goes first alternates too), so both
see the same load. The commits are `bench.real_history.history_commits(repo, "2025-11-01",
"2026-09-01", 40, "refs/heads/main")[first:first + count]`, each reviewed against its parent; the
first 2 warm the store and are left out of the medians. Per review: wall seconds, CPU seconds of
every process (the review's own, its workers' and git's), the reviewing process's own CPU (the
critical path on an idle machine when a worker shares the checks), packages evaluated, findings.
With `--warm N`, each commit is then reviewed N more times by each version as a user's warm review
is: a new `pr-check review` process against that version's store (alternating versions as above),
timed whole, imports included.
`DIR` is a checkout of a version (`git archive REV | tar -x -C DIR`); `--after` defaults to this one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def serve(repo: Path, cache: Path) -> None:
    """Review each commit read from stdin against its parent; one JSON line per review."""
    import checks  # noqa: F401 - imported before any clock starts, as the App's fork server preloads them
    from pr_check.review import review_repository

    def own() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def every() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own() + usage.ru_utime + usage.ru_stime

    for line in sys.stdin:
        sha = line.strip()
        own_started, every_started, started = own(), every(), time.perf_counter()
        report = review_repository(repo, f"{sha}^", sha, cache_dir=cache)
        record = {
            "commit": sha,
            "seconds": round(time.perf_counter() - started, 3),
            "cpu_s": round(every() - every_started, 3),
            "own_cpu_s": round(own() - own_started, 3),
            "evaluated": sum(cell.evaluated for cell in report.stats.cells.values()),
            "findings": sorted([f.rule, f.path, f.line, f.fingerprint, f.message] for f in report.findings),
            "load": [round(x, 2) for x in os.getloadavg()],
        }
        print(json.dumps(record), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a bare clone sharing the mirror's objects")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--first", type=int, default=5)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument(
        "--stores", type=Path, default=Path("/tmp/cold-pairs"), help="one fresh store per version under here"
    )
    parser.add_argument("--warm", type=int, default=0, help="whole-process warm reviews per commit and version")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "cold_pairs.json")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # a version's process: its store
    arguments = parser.parse_args(argv)
    if arguments.serve is not None:
        serve(arguments.repo, arguments.serve)
        return 0
    from bench.real_history import history_commits

    listed = history_commits(arguments.repo, "2025-11-01", "2026-09-01", 40, "refs/heads/main")
    commits = listed[arguments.first : arguments.first + arguments.count]
    versions = {"before": arguments.before.resolve(), "after": arguments.after.resolve()}
    processes = {}
    for name, root in versions.items():
        store = arguments.stores / name
        subprocess.run(["rm", "-rf", str(store)], check=True)
        command = ["nice", "-n", "10", sys.executable, __file__, "--repo", str(arguments.repo)]
        command += ["--before", str(root), "--serve", str(store)]
        # This file serves, importing the version's bot/, checks/ and pr_check/ (PYTHONPATH puts them first).
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(ROOT)]))
        processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
    rows: dict[str, list[dict]] = {name: [] for name in versions}
    for index, sha in enumerate(commits):
        for name in list(versions) if index % 2 == 0 else list(reversed(versions)):
            process = processes[name]
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(sha + "\n")
            process.stdin.flush()
            row = json.loads(process.stdout.readline())
            rows[name].append(row)
            print(
                f"{name:6s} {sha[:10]} wall {row['seconds']:6.2f} cpu {row['cpu_s']:6.2f} own {row['own_cpu_s']:6.2f} "
                f"evaluated {row['evaluated']:4d} findings {len(row['findings'])} load {row['load'][0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
    for process in processes.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    summary = {}
    for name, measured in rows.items():
        timed = measured[2:]
        summary[name] = {
            key: round(statistics.median(row[key] for row in timed), 2) for key in ("seconds", "cpu_s", "own_cpu_s")
        }
        summary[name]["load"] = [min(row["load"][0] for row in timed), max(row["load"][0] for row in timed)]
    warm = _warm_pairs(arguments, versions, commits) if arguments.warm else {}
    for name, seconds in warm.items():
        summary[name]["warm_seconds"] = round(statistics.median(seconds), 3)
    summary["findings_identical"] = all(
        a["findings"] == b["findings"] for a, b in zip(rows["before"], rows["after"], strict=True)
    )
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps({"summary": summary, "rows": rows, "warm": warm}, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)
    return 0


def _warm_pairs(arguments: argparse.Namespace, versions: dict[str, Path], commits: list[str]) -> dict[str, list[float]]:
    """Whole-process warm reviews: each version's CLI in a new process, served from its own store."""
    seconds: dict[str, list[float]] = {name: [] for name in versions}
    for repeat in range(arguments.warm):
        for index, sha in enumerate(commits):
            order = list(versions) if (index + repeat) % 2 == 0 else list(reversed(versions))
            for name in order:
                root = versions[name]
                environment = dict(os.environ, PYTHONPATH=str(root))
                command = [sys.executable, "-c", "import sys; from pr_check.cli import main; sys.exit(main())"]
                command += ["review", "--repo", str(arguments.repo), "--base", f"{sha}^", "--head", sha]
                command += ["--cache-dir", str(arguments.stores / name), "--format", "json", "--exit-zero"]
                started = time.perf_counter()
                subprocess.run(command, cwd=root, env=environment, check=True, stdout=subprocess.DEVNULL)
                seconds[name].append(round(time.perf_counter() - started, 3))
                print(f"warm {name:6s} {sha[:10]} {seconds[name][-1]:.3f}", file=sys.stderr, flush=True)
    return seconds


if __name__ == "__main__":
    sys.exit(main())
