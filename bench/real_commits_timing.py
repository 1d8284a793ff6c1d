"""Cold and warm review time and peak memory over real commits of a pytorch/executorch mirror.

    python -m bench.real_commits_timing --repo /path/to/executorch.git --count 12 \
        [--ref refs/heads/main] [--out bench/out/real_timing] [--profile median|slowest|none] [--shared-cache] \
        [--whole-process] [--source DIR]

The commits are bench/real_history.py's selection: first-parent commits of REF touching Buck, CMake
or CUDA-backend files, evenly spaced over the date range, each reviewed against its first parent.
Per commit, in fresh processes (bench/child.py, as the App reviews in a child): a cold review with
an empty cache directory of its own, then a warm review of the same base..head with that directory.
With --shared-cache all commits share one cache directory (as bench/real_history.py does), so a
"cold" review reuses what earlier commits derived for packages they have in common. Peak RSS is
each child's ru_maxrss (the import of the engine included). Then one warm review is run again under
cProfile (the commit with the median warm time, unless told otherwise).
With --run-checks a warm review is also run that does not read its stored whole result (it
loads the models and runs the checks from the stored facts: what a new head of the same pull
request pays, less the packages it changed). With --whole-process each commit is then reviewed a third time as a user runs it: `pr-check review`
in a new interpreter, start-up, imports and output included (the "whole process" warm figure).
--source DIR reviews with the code unpacked in DIR (`git archive REV | tar -x -C DIR`), so two
versions are measured by one script in one session. Children write bytecode, as an install has it.
Writes OUT/summary.txt, OUT/commits.csv and OUT/profile.txt; read-only on the mirror. Targets
(issue "Engine layout"): warm median < 0.5 s, p90 < 1 s, cold < 10 s, peak < 500 MB.
"""

from __future__ import annotations

import argparse
import csv
import io
import pstats
import statistics
import sys
import tempfile
from pathlib import Path

from bench.child import Measured, review_in_child, whole_process_review
from bench.real_history import history_commits, percentile

TARGETS = "targets: warm median < 0.5 s, p90 < 1 s, cold < 10 s, peak RSS < 500 MB"


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def summarize(
    cold: list[Measured],
    warm: list[Measured],
    whole: list[Measured] | None = None,
    checked: list[Measured] | None = None,
) -> list[str]:
    """Median, p90 and max of each kind, and the peak RSS of any review."""
    lines = []
    kinds = [("warm", warm), ("cold", cold), *([("warm, whole process", whole)] if whole else [])]
    kinds += [("warm, checks run (result store not read)", checked)] if checked else []
    for name, values in ((name, [m.seconds for m in runs]) for name, runs in kinds):
        lines.append(
            f"{name}: median {statistics.median(values):.2f}s p90 {percentile(values, 0.9):.2f}s max {max(values):.2f}s"
        )
    for name, values in ((name, [m.cpu_s for m in runs]) for name, runs in kinds):
        lines.append(
            f"{name} CPU (user+sys): median {statistics.median(values):.2f}s p90 {percentile(values, 0.9):.2f}s"
        )
    lines.append(
        f"peak RSS: {max(m.peak_rss_mb for m in cold + warm):.0f} MB "
        f"(warm reviews {max(m.peak_rss_mb for m in warm):.0f} MB)"
    )
    return lines


def profile_top(path: Path, limit: int = 25) -> str:
    """The profile's top functions by own time and by cumulative time, as text."""
    text = io.StringIO()
    stats = pstats.Stats(str(path), stream=text)
    stats.sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a pytorch/executorch clone or bare mirror")
    parser.add_argument("--ref", default="refs/heads/main")
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--since", default="2025-11-01")
    parser.add_argument("--until", default="2026-09-01")
    parser.add_argument("--out", type=Path, default=Path("bench/out/real_timing"))
    parser.add_argument(
        "--profile",
        choices=("median", "slowest", "none"),
        default="median",
        help="which commit's warm review to run again under cProfile",
    )
    parser.add_argument(
        "--shared-cache",
        action="store_true",
        help="one cache directory for the whole run instead of an empty one per commit",
    )
    parser.add_argument(
        "--whole-process", action="store_true", help="also time `pr-check review` warm, start-up included"
    )
    parser.add_argument(
        "--run-checks",
        action="store_true",
        help="also time a warm review that runs its checks though its whole result is stored",
    )
    parser.add_argument("--source", type=Path, help="review with the code in this directory instead of this checkout")
    arguments = parser.parse_args(argv)
    source = arguments.source.resolve() if arguments.source else None
    commits = history_commits(arguments.repo, arguments.since, arguments.until, arguments.count, arguments.ref)
    arguments.out.mkdir(parents=True, exist_ok=True)
    load_before = _loadavg()
    cold: list[Measured] = []
    warm: list[Measured] = []
    whole: list[Measured] = []
    checked: list[Measured] = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="pr-check-real-timing-") as directory:
        for index, sha in enumerate(commits, 1):
            cache = Path(directory) / ("shared" if arguments.shared_cache else sha)
            cold.append(review_in_child(arguments.repo, f"{sha}^", sha, cache, source=source))
            warm.append(review_in_child(arguments.repo, f"{sha}^", sha, cache, source=source))
            if arguments.run_checks:
                checked.append(review_in_child(arguments.repo, f"{sha}^", sha, cache, source=source, run_checks=True))
            if arguments.whole_process:
                whole.append(whole_process_review(arguments.repo, f"{sha}^", sha, cache, source=source))
            rows.append(
                {
                    **(
                        {"whole_s": whole[-1].seconds, "whole_cpu_s": whole[-1].cpu_s}
                        if arguments.whole_process
                        else {}
                    ),
                    **(
                        {"checks_s": checked[-1].seconds, "checks_cpu_s": checked[-1].cpu_s}
                        if arguments.run_checks
                        else {}
                    ),
                    "commit": sha,
                    "cold_s": cold[-1].seconds,
                    "warm_s": warm[-1].seconds,
                    "cold_cpu_s": cold[-1].cpu_s,
                    "warm_cpu_s": warm[-1].cpu_s,
                    "cold_rss_mb": cold[-1].peak_rss_mb,
                    "warm_rss_mb": warm[-1].peak_rss_mb,
                    "findings": warm[-1].findings,
                    "packages": warm[-1].packages,
                    "loadavg": _loadavg(),
                }
            )
            print(
                f"[{index}/{len(commits)}] {sha[:10]} cold {cold[-1].seconds:6.2f}s {cold[-1].peak_rss_mb:4.0f} MB  "
                f"warm {warm[-1].seconds:5.2f}s {warm[-1].peak_rss_mb:4.0f} MB  "
                + (f"whole {whole[-1].seconds:5.2f}s cpu {whole[-1].cpu_s:5.2f}s  " if whole else "")
                + (f"checks run {checked[-1].seconds:5.2f}s cpu {checked[-1].cpu_s:5.2f}s  " if checked else "")
                + f"findings {warm[-1].findings}  "
                f"load {rows[-1]['loadavg']}",
                file=sys.stderr,
                flush=True,
            )
        load_after = _loadavg()
        profiled = None
        if arguments.profile != "none":
            order = sorted(range(len(commits)), key=lambda i: warm[i].seconds)
            chosen = order[-1] if arguments.profile == "slowest" else order[(len(order) - 1) // 2]
            profiled = commits[chosen]
            stats_path = Path(directory) / "warm.prof"
            cache = Path(directory) / ("shared" if arguments.shared_cache else profiled)
            again = review_in_child(arguments.repo, f"{profiled}^", profiled, cache, stats_path, source=source)
            header = (
                f"warm review of {profiled} ({arguments.profile} warm time, {warm[chosen].seconds:.2f}s "
                f"unprofiled, {again.seconds:.2f}s under cProfile)\n"
            )
            (arguments.out / "profile.txt").write_text(header + profile_top(stats_path))
    with (arguments.out / "commits.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        f"{len(commits)} commits of {arguments.ref} ({arguments.since}..{arguments.until}), each against its parent;",
        "one review per fresh process; cold: "
        + ("first review, cache shared with the earlier commits" if arguments.shared_cache else "empty cache")
        + "; warm: second review, same cache directory",
        f"code: {source or 'this checkout'}",
        *summarize(cold, warm, whole, checked),
        f"load average (1/5/15 min): {load_before} before, {load_after} after",
        TARGETS,
    ]
    if profiled is not None:
        lines.append(f"profile of one warm review ({profiled[:10]}): {arguments.out / 'profile.txt'}")
    (arguments.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
