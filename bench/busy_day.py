"""A busy day of one repository, measured in one run: issue 21's figures beside the previous ones.

    python -m bench.busy_day --repo MIRROR [--distinct 40] [--again 10] [--warm 12] [--out bench/out/busy_day]

1. A bare clone of the mirror that shares its objects, so the cache is where `pr-check` puts it
   by default (inside the git directory) with the default bound (512 MiB).
2. One process reviews `--distinct` real commits in a row, each against its first parent, with
   that cache: the cold figures (what each review had to evaluate, with the store of the ones
   before: the App's situation), the resident set after each review and the peak. The commits
   are those of tests/real_tree/verdicts.toml (their findings are judged, so they are the
   parity set) and then commits touching build files, evenly spaced over Nov 2025 - Aug 2026.
3. The same process reviews the first `--again` of them again (the oldest: the first evicted
   when the store outgrows its bound): each re-review's time, and the store's size after.
4. Whole-process warm reviews: `pr-check review` of `--warm` of the commits in a new process
   each, wall and CPU seconds; and `pr-check --version`.
Writes OUT/busy_day.json (every figure, every finding of every review, for bench/parity.py
--compare) and OUT/busy_day.md (the table); bench/plots_busy_day.py draws the plots.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def choose_commits(repo: Path, distinct: int) -> list[str]:
    """The judged commits first, then build-touching history commits, `distinct` in all (full ids)."""
    from bench.real_history import history_commits

    judged = tomllib.loads((ROOT / "tests/real_tree/verdicts.toml").read_text())["finding"]
    chosen: list[str] = []
    for short in dict.fromkeys(v["commit"] for v in judged):
        chosen.append(
            subprocess.run(
                ["git", "-C", str(repo), "rev-parse", f"{short}^{{commit}}"], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
    for sha in history_commits(repo, "2025-11-01", "2026-09-01", distinct, "refs/heads/main"):
        if len(chosen) >= distinct:
            break
        if sha not in chosen:
            chosen.append(sha)
    return chosen[:distinct]


def review_in_process(repo: Path, commits: list[str]) -> list[dict]:
    """Review each commit in this process with the repository's default cache."""
    from bench.parity import _finding
    from pr_check.review import review_repository

    records = []
    for index, sha in enumerate(commits, 1):
        cpu, started = _cpu(), time.perf_counter()
        report = review_repository(repo, f"{sha}^", sha)
        seconds, cpu = time.perf_counter() - started, _cpu() - cpu
        cells = report.stats.cells
        record = {
            "commit": sha,
            "seconds": round(seconds, 3),
            "cpu_s": round(cpu, 3),
            "evaluated": sum(c.evaluated for c in cells.values()),
            "findings": sorted((_finding(f) for f in report.findings), key=lambda r: json.dumps(r, sort_keys=True)),
            "suppressed": sorted((_finding(f) for f in report.suppressed), key=lambda r: json.dumps(r, sort_keys=True)),
        }
        del report
        gc.collect()
        record["rss_mb"], record["peak_mb"] = round(_resident_mb(), 1), round(_peak_mb(), 1)
        # The evaluation workers' own peak (the largest of any child so far, git included).
        record["children_peak_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
        records.append(record)
        print(
            f"[{index}/{len(commits)}] {sha[:10]} {seconds:6.2f}s cpu {cpu:6.2f}s evaluated {record['evaluated']:4d} "
            f"findings {len(record['findings'])} rss {record['rss_mb']:.0f} MB peak {record['peak_mb']:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    return records


def whole_process(repo: Path, commits: list[str]) -> dict:
    """`pr-check review` per commit in a new process (a warm store), and `pr-check --version`."""
    executable = Path(sys.executable).parent / "pr-check"
    reviews = []
    for sha in commits:
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = subprocess.run(
            [
                str(executable),
                "review",
                "--repo",
                str(repo),
                "--base",
                f"{sha}^",
                "--head",
                sha,
                "--format",
                "json",
                "--exit-zero",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"pr-check review {sha} failed: {done.stderr[-2000:]}")
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        reviews.append({"commit": sha, "seconds": round(seconds, 3), "cpu_s": round(cpu, 3)})
        print(f"warm {sha[:10]} {seconds:5.2f}s cpu {cpu:5.2f}s", file=sys.stderr, flush=True)
    versions = []
    for _ in range(10):
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([str(executable), "--version"], capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        versions.append(
            (time.perf_counter() - started, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
        )
    return {
        "reviews": reviews,
        "version_s": [round(s, 3) for s, _ in versions],
        "version_cpu_s": [round(c, 3) for _, c in versions],
    }


def _store_size(directory: Path) -> dict:
    from bot.store.disk import DiskStore

    info = DiskStore(directory).info()
    on_disk = subprocess.run(["du", "-sb", str(directory)], capture_output=True, text=True, check=True).stdout.split()[
        0
    ]
    blocks = subprocess.run(["du", "-sk", str(directory)], capture_output=True, text=True, check=True).stdout.split()[0]
    return {
        "entries": info.entries,
        "bytes": info.bytes,
        "apparent_bytes": int(on_disk),
        "disk_kib": int(blocks),
        "bound": info.bound,
    }


def summarize(run: dict) -> dict:
    first = run["distinct"]
    cold = [r["seconds"] for r in first]
    cold_cpu = [r["cpu_s"] for r in first]
    again = run["again"]
    warm = [r["seconds"] for r in run["whole_process"]["reviews"]]
    warm_cpu = [r["cpu_s"] for r in run["whole_process"]["reviews"]]
    return {
        "commits": len(first),
        "cold_median_s": statistics.median(cold),
        "cold_p90_s": percentile(cold, 0.9),
        "cold_median_cpu_s": statistics.median(cold_cpu),
        "cold_p90_cpu_s": percentile(cold_cpu, 0.9),
        "again_max_s": max((r["seconds"] for r in again), default=None),
        "again_median_s": statistics.median(r["seconds"] for r in again) if again else None,
        "again_max_cpu_s": max((r["cpu_s"] for r in again), default=None),
        "again_evaluated": sum(r["evaluated"] for r in again),
        "store_mib": run["store"]["bytes"] / 2**20,
        "store_disk_mib": run["store"]["disk_kib"] / 1024,
        # `--warm 0` (a memory run) times no whole-process review.
        "warm_median_s": statistics.median(warm) if warm else None,
        "warm_p90_s": percentile(warm, 0.9) if warm else None,
        "warm_median_cpu_s": statistics.median(warm_cpu) if warm_cpu else None,
        "warm_p90_cpu_s": percentile(warm_cpu, 0.9) if warm_cpu else None,
        "version_median_s": statistics.median(run["whole_process"]["version_s"]),
        "version_median_cpu_s": statistics.median(run["whole_process"]["version_cpu_s"]),
        "peak_after_one_mb": first[0]["peak_mb"],
        "peak_after_all_mb": (again or first)[-1]["peak_mb"],
        "worker_peak_mb": (again or first)[-1]["children_peak_mb"],
        "reviews_in_process": len(first) + len(again),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a pytorch/executorch mirror (read only)")
    parser.add_argument("--distinct", type=int, default=40)
    parser.add_argument("--again", type=int, default=10)
    parser.add_argument("--warm", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("bench/out/busy_day"))
    arguments = parser.parse_args(argv)
    arguments.out.mkdir(parents=True, exist_ok=True)
    clone = arguments.out / "repo.git"
    if clone.exists():
        subprocess.run(["rm", "-rf", str(clone)], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(arguments.repo), str(clone)], check=True)
    commits = choose_commits(clone, arguments.distinct)
    run: dict = {"load_start": _load(), "jobs": os.environ.get("PR_CHECK_JOBS", "default"), "commits": commits}
    run["distinct"] = review_in_process(clone, commits)
    run["again"] = review_in_process(clone, commits[: arguments.again])
    run["store"] = _store_size(clone / "pr-check" / "cache")
    run["whole_process"] = whole_process(clone, commits[: arguments.warm])
    run["load_end"] = _load()
    run["summary"] = summarize(run)
    # bench/parity.py --compare reads "reviews": the first review of each commit.
    run["reviews"] = run["distinct"]
    (arguments.out / "busy_day.json").write_text(json.dumps(run, indent=1, sort_keys=True))
    print(json.dumps(run["summary"], indent=1))
    subprocess.run(["rm", "-rf", str(clone)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
