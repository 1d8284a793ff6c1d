"""Review real first-parent commits of a pytorch/executorch mirror, each against its parent.

    python -m bench.real_history --repo /path/to/executorch.git --count 150 \
        [--since 2025-11-01 --until 2026-09-01] [--out bench/out/history] [--no-warm]

Commits are those that touch Buck, CMake or CUDA-backend C++ files, taken evenly spaced over the
date range so that a count of 30 and one of 150 cover the same months. For each commit the full
JSON report is written to OUT/<sha>.json; OUT/summary.txt holds a per-rule table (by severity)
and cold/warm timing percentiles. Read-only on the mirror; the evaluation cache is a temporary
directory, so "cold" means nothing of this run was cached yet for that commit's packages.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Pathspecs git understands: build files of every cell and CMake, and the CUDA backend's C++.
BUILD_PATHSPECS = (
    ":(glob)**/BUCK",
    ":(glob)**/TARGETS",
    ":(glob)**/*.bzl",
    ":(glob)**/CMakeLists.txt",
    ":(glob)**/*.cmake",
    ":(glob)backends/cuda/**",
    ":(glob)backends/aoti/**",
    ":(glob)extension/cuda/**",
)


# The 150-commit bench's window and count (verdicts.toml judges its findings); other benches that
# sample the same months leave these commits out to stay disjoint from it.
BENCH_SINCE, BENCH_UNTIL, BENCH_COUNT = "2025-11-01", "2026-09-01", 150


def history_commits(repo: Path, since: str, until: str, count: int, ref: str = "HEAD") -> list[str]:
    """`count` first-parent commits touching build files, evenly spaced (oldest first)."""
    listed = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "log",
            "--first-parent",
            "--format=%H",
            f"--since={since}",
            f"--until={until}",
            ref,
            "--",
            *BUILD_PATHSPECS,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    listed.reverse()
    if count >= len(listed):
        return listed
    step = len(listed) / count
    return [listed[int(index * step)] for index in range(count)]


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def main(argv: list[str] | None = None) -> int:
    from bot.render.json import render_json
    from pr_check.review import review_repository

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a pytorch/executorch clone or bare mirror")
    parser.add_argument("--ref", default="HEAD", help="the branch whose first-parent history is walked")
    parser.add_argument("--count", type=int, default=BENCH_COUNT, help="how many commits to review")
    parser.add_argument("--since", default=BENCH_SINCE, help="first commit date (git --since)")
    parser.add_argument("--until", default=BENCH_UNTIL, help="last commit date (git --until)")
    parser.add_argument("--out", type=Path, default=Path("bench/out/history"), help="where the JSON goes")
    parser.add_argument("--no-warm", action="store_true", help="skip the second (warm) review of each commit")
    parser.add_argument("--previous", type=Path, help="an earlier summary.txt, shown beside this run's figures")
    arguments = parser.parse_args(argv)
    commits = history_commits(arguments.repo, arguments.since, arguments.until, arguments.count, arguments.ref)
    arguments.out.mkdir(parents=True, exist_ok=True)
    by_rule: collections.Counter[tuple[str, str]] = collections.Counter()
    cold_times: list[float] = []
    warm_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pr-check-history-") as directory:
        for index, sha in enumerate(commits, 1):
            started = time.perf_counter()
            report = review_repository(arguments.repo, f"{sha}^", sha, cache_dir=Path(directory))
            cold_times.append(time.perf_counter() - started)
            if not arguments.no_warm:
                started = time.perf_counter()
                review_repository(arguments.repo, f"{sha}^", sha, cache_dir=Path(directory))
                warm_times.append(time.perf_counter() - started)
            document = render_json(report)
            (arguments.out / f"{sha}.json").write_text(json.dumps(document, indent=1, sort_keys=True))
            loud = [f for f in report.findings if f.severity.label in ("blocker", "major")]
            for finding in report.findings:
                by_rule[(finding.rule, finding.severity.label)] += 1
            print(
                f"[{index}/{len(commits)}] {sha[:10]} cold {cold_times[-1]:5.2f}s "
                f"findings {len(report.findings)} loud {len(loud)}",
                file=sys.stderr,
                flush=True,
            )
    lines = [f"{len(commits)} commits, {arguments.since}..{arguments.until}", "", "rule | severity | findings"]
    lines += [f"{rule} | {severity} | {n}" for (rule, severity), n in sorted(by_rule.items())]
    for name, values in (("cold", cold_times), ("warm", warm_times)):
        if values:
            lines.append(
                f"{name}: median {statistics.median(values):.2f}s p90 {percentile(values, 0.9):.2f}s "
                f"max {max(values):.2f}s"
            )
    lines.append(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if arguments.previous is not None and arguments.previous.exists():
        earlier = [
            line
            for line in arguments.previous.read_text().splitlines()
            if line.startswith(("cold:", "warm:", "peak RSS:"))
        ]
        lines += ["", "previous run:", *earlier]
    (arguments.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
